// NCCL RAS output as `ncclras -f json` prints it (NCCL >= 2.28.7; format read from NCCL's
// src/ras/client_support.cc, rasDumpCommsToJSON and rasClientsNotifyEvent): the status document
// lists per communicator the ranks RAS reached (status, collective launch counts by op) and the
// missing ones (unresponsive, considered_dead); `ncclras -m -f json` streams one object per event
// (PEER_DEAD, PEER_UNRESPONSIVE, ...). Host fields are addresses, ranks count in their
// communicator, and the counts are launches, not completions.
#include <fmt/format.h>

#include <map>
#include <set>

#include "core/error.h"
#include "core/printable.h"
#include "evidence/readers.h"

namespace collie::evidence::detail {
namespace {

using nlohmann::json;

// j[key], which must be there and pass `is` ("an integer", ...: what the error calls it).
const json& need(const json& j, const char* key, const std::string& where,
                 bool (json::*is)() const noexcept, const char* what) {
  if (!j.is_object() || !j.contains(key))
    throw InvalidArgument(fmt::format("ncclras JSON: missing field '{}' in {}", key, where));
  const json& v = j.at(key);
  if (is != nullptr && !(v.*is)())
    throw InvalidArgument(
        fmt::format("ncclras JSON: field '{}' in {} is not {}", key, where, what));
  return v;
}

const json& need(const json& j, const char* key, const std::string& where) {
  return need(j, key, where, nullptr, "");
}

int64_t need_int(const json& j, const char* key, const std::string& where) {
  return need(j, key, where, &json::is_number_integer, "an integer").get<int64_t>();
}

std::string need_str(const json& j, const char* key, const std::string& where) {
  return need(j, key, where, &json::is_string, "a string").get<std::string>();
}

bool need_bool(const json& j, const char* key, const std::string& where) {
  return need(j, key, where, &json::is_boolean, "true/false").get<bool>();
}

const json& need_array(const json& j, const char* key, const std::string& where) {
  return need(j, key, where, &json::is_array, "a list");
}

// ncclResult_t values RAS prints as init_state / async_error.
std::string nccl_result(int64_t v) {
  switch (v) {
    case 0:
      return "success";
    case 1:
      return "unhandled CUDA error";
    case 2:
      return "system error";
    case 3:
      return "internal error";
    case 4:
      return "invalid argument";
    case 5:
      return "invalid usage";
    case 6:
      return "remote error";
    case 7:
      return "in progress";
    default:
      return fmt::format("error {}", v);
  }
}

struct Process {
  std::string host;
  int64_t pid = -1;
  std::string label() const {
    return pid >= 0 ? fmt::format("process {} on {}", pid, host)
                    : fmt::format("a process on {}", host);
  }
};

// One missing process, over every communicator that misses it.
struct Missing {
  Process p;
  bool dead = false, unresponsive = false;
  std::vector<std::string> where;  // "rank 1 of communicator 0x.. (size 2), GPU 1"
};

// "1 rank", "2 ranks", "3 processes".
std::string plural(size_t n, const std::string& word) {
  if (n == 1) return "1 " + word;
  return fmt::format("{} {}{}", n, word, word.ends_with("s") ? "es" : "s");
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += fmt::format("{}{}", s.empty() ? "" : ", ", r);
  return s;
}

// The ranks RAS reached in one communicator that launched fewer of some collective than the
// others: the lagging set, whatever its size (NVIDIA/nccl#1911: name who is behind, not the
// minority).
void lagging(const json& ranks, const std::string& comm, const std::string& time,
             const std::map<int, Process>& procs, Evidence& e) {
  std::map<std::string, std::map<int, int64_t>> counts;  // op -> rank -> launches
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string where = fmt::format("{} ranks[{}]", comm, i);
    const int rank = static_cast<int>(need_int(ranks[i], "rank", where));
    const json& c = need(ranks[i], "collective_counts", where);
    if (!c.is_object())
      throw InvalidArgument("ncclras JSON: collective_counts in " + where + " is not an object");
    for (const auto& [op, n] : c.items()) {
      if (!n.is_number_integer() || n.get<int64_t>() < 0)
        throw InvalidArgument(fmt::format("ncclras JSON: count '{}' in {} is not a count",
                                          printable(op.substr(0, 40)), where));
      counts[op][rank] = n.get<int64_t>();
      e.facts.push_back({"rank", rank, comm, procs.at(rank).host, "", op, "launched",
                         static_cast<double>(n.get<int64_t>()), "", time});
    }
  }
  // One finding per lagging set, naming each op it lags in.
  std::map<std::vector<int>, std::vector<std::string>> by_set;
  std::map<std::vector<int>, int64_t> gap_of;
  for (const auto& [op, per_rank] : counts) {
    int64_t most = 0;
    for (const auto& [r, n] : per_rank) most = std::max(most, n);
    std::vector<int> behind;
    int64_t least = most, next = 0;
    for (const auto& [r, n] : per_rank)
      if (n < most) {
        behind.push_back(r);
        least = std::min(least, n);
        next = std::max(next, n);
      }
    if (behind.empty()) continue;
    by_set[behind].push_back(fmt::format(
        "{}: launched {} where the others launched {}", op,
        least == next ? std::to_string(least) : fmt::format("{} to {}", least, next), most));
    gap_of[behind] = std::max(gap_of[behind], most - least);
  }
  for (const auto& [set, lines] : by_set) {
    Finding f;
    f.type = FindingType::NotJoined;
    f.who = fmt::format("rank{} {} of communicator {}", set.size() > 1 ? "s" : "", ranks_text(set),
                        comm);
    f.ranks = set;
    std::set<std::string> hosts;
    for (int r : set) hosts.insert(procs.at(r).host);
    f.hosts.assign(hosts.begin(), hosts.end());
    // One launch behind may be a collective in flight when RAS asked.
    f.confidence = gap_of.at(set) >= 2 ? kMeasured : kIndirect;
    f.evidence.push_back(fmt::format(
        "ncclras {}: alive and reachable, but behind the others (RAS counts launches, not "
        "completions)",
        time));
    for (const auto& l : lines) f.evidence.push_back(l);
    for (int r : set) f.evidence.push_back(fmt::format("rank {}: {}", r, procs.at(r).label()));
    f.next_step =
        "see what those ranks do outside NCCL (py-spy dump --pid PID on their hosts; collie "
        "analyze on their flight-recorder dumps); ncclras again in a few seconds tells a stuck "
        "rank from one in flight";
    e.findings.push_back(std::move(f));
  }
}

void missing_finding(const Missing& m, const std::string& time, Evidence& e) {
  Finding f;
  f.type = m.dead ? FindingType::RankDead : FindingType::Unreachable;
  f.confidence = m.dead ? kStated : kMeasured;
  f.who = m.p.label();
  if (!m.p.host.empty() && m.p.host != "unknown") f.hosts = {m.p.host};
  f.evidence.push_back(
      m.dead ? fmt::format("ncclras {}: considered dead (RAS gives up on a process it cannot "
                           "reach for 60 s)",
                           time)
             : fmt::format("ncclras {}: unresponsive (RAS could not reach it while collecting; "
                           "it is declared dead after 60 s)",
                           time));
  for (const auto& w : m.where) f.evidence.push_back("missing from " + w);
  f.next_step = m.dead ? "that process is gone: check its host (dmesg, the job's log for its "
                         "last lines, node health); restart the job without it or from a "
                         "checkpoint"
                       : "run ncclras again: still missing after 60 s means dead; meanwhile "
                         "check that host (ping, ssh, dmesg) and its network";
  e.findings.push_back(std::move(f));
}

}  // namespace

void read_ras_status(const json& j, Evidence& e) {
  const std::string time = j.contains("timestamp") && j["timestamp"].is_string()
                               ? j["timestamp"].get<std::string>()
                               : std::string();
  const json& comms = need_array(j, "communicators", "the document");
  std::map<std::string, Missing> missing;  // by host:pid (or communicator:rank)
  std::vector<std::string> order;
  int ranks_seen = 0, errors = 0;
  for (size_t c = 0; c < comms.size(); ++c) {
    const json& comm = comms[c];
    const std::string where = fmt::format("communicators[{}]", c);
    const std::string hash = printable(need_str(comm, "hash", where));
    const int64_t size = need_int(comm, "size", where);
    const std::string name = fmt::format("{} (size {})", hash, size);
    const json& ranks = need_array(comm, "ranks", where);
    std::map<int, Process> procs;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const std::string rw = fmt::format("{}.ranks[{}]", where, i);
      const json& r = ranks[i];
      const int rank = static_cast<int>(need_int(r, "rank", rw));
      if (rank < 0 || rank >= size)
        throw InvalidArgument(
            fmt::format("ncclras JSON: rank {} in {} is outside the "
                        "communicator's size {}",
                        rank, rw, size));
      Process p{need_str(r, "host", rw), need_int(r, "pid", rw)};
      procs[rank] = p;
      const json& st = need(r, "status", rw);
      const int64_t init = need_int(st, "init_state", rw + ".status");
      const int64_t async = need_int(st, "async_error", rw + ".status");
      const bool abort = need_bool(st, "abort_flag", rw + ".status");
      std::string status = "running";
      if (init != 0) status = init == 7 ? "initializing" : "init failed: " + nccl_result(init);
      if (async != 0) status = "async error: " + nccl_result(async);
      if (abort) status = "aborted";
      errors += status != "running" && status != "initializing";
      e.facts.push_back({"rank", rank, name, p.host, "", "", "status", 0, status, time});
      ++ranks_seen;
    }
    lagging(ranks, name, time, procs, e);
    const json& miss = need_array(comm, "missing_ranks", where);
    for (size_t i = 0; i < miss.size(); ++i) {
      const std::string mw = fmt::format("{}.missing_ranks[{}]", where, i);
      const json& m = miss[i];
      const int rank = static_cast<int>(need_int(m, "rank", mw));
      const Process p{need_str(m, "host", mw), need_int(m, "pid", mw)};
      const json& st = need(m, "status", mw);
      const bool unresponsive = need_bool(st, "unresponsive", mw + ".status");
      const bool dead = need_bool(st, "considered_dead", mw + ".status");
      const std::string state = dead ? "dead" : unresponsive ? "unresponsive" : "missing";
      e.facts.push_back({"rank", rank, name, p.host, "", "", "status", 0, state, time});
      if (!dead && !unresponsive) continue;  // reachable: starting or leaving the communicator
      const std::string key = p.pid >= 0 && p.host != "unknown"
                                  ? fmt::format("{}:{}", p.host, p.pid)
                                  : fmt::format("{}:{}", hash, rank);
      if (!missing.count(key)) order.push_back(key);
      Missing& x = missing[key];
      x.p = p;
      x.dead = x.dead || dead;
      x.unresponsive = x.unresponsive || unresponsive;
      const int64_t gpu = m.contains("cuda_dev") && m["cuda_dev"].is_number_integer()
                              ? m["cuda_dev"].get<int64_t>()
                              : -1;
      x.where.push_back(fmt::format("communicator {} as rank {}{}", name, rank,
                                    gpu >= 0 ? fmt::format(", GPU {}", gpu) : ""));
    }
  }
  for (const auto& key : order) missing_finding(missing[key], time, e);
  int dead = 0;
  for (const auto& [k, m] : missing) dead += m.dead;
  e.contributed = fmt::format(
      "ncclras status at {}: {}, {} reached, {} missing ({} dead), {} with "
      "an error",
      time.empty() ? "?" : time, plural(comms.size(), "communicator"), plural(ranks_seen, "rank"),
      plural(missing.size(), "process"), dead, plural(errors, "rank"));
}

void read_ras_events(const std::vector<json>& events, Evidence& e) {
  struct State {
    Process p;
    std::string last;  // PEER_DEAD, PEER_UNRESPONSIVE, PEER_NEW, ...
    std::string time;
    std::vector<std::string> lines;
  };
  std::map<std::string, State> peers;
  std::vector<std::string> order;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& ev = events[i];
    const std::string where = fmt::format("event {}", i + 1);
    const std::string name = printable(need_str(ev, "event", where));
    const std::string time = ev.contains("timestamp") && ev["timestamp"].is_string()
                                 ? ev["timestamp"].get<std::string>()
                                 : std::string();
    Process p;
    if (ev.contains("peer") && ev["peer"].is_object()) {
      const json& peer = ev["peer"];
      if (peer.contains("host")) {
        p.host = need_str(peer, "host", where + ".peer");
        p.pid = need_int(peer, "pid", where + ".peer");
      } else {
        p.host = need_str(peer, "addr", where + ".peer");
      }
    }
    const std::string details = ev.contains("details") && ev["details"].is_string()
                                    ? ev["details"].get<std::string>()
                                    : std::string();
    e.facts.push_back({"host", -1, "", p.host, "", "", "ras_event", 0, name, time});
    if (p.host.empty()) continue;  // an event about no peer
    const std::string key = fmt::format("{}:{}", p.host, p.pid);
    if (!peers.count(key)) order.push_back(key);
    State& s = peers[key];
    s.p = p;
    s.lines.push_back(fmt::format("{} {}{}", time.empty() ? "?" : time, name,
                                  details.empty() ? "" : ": " + details.substr(0, 80)));
    // The states that decide; trace events (retries, stuck sends) only add lines.
    if (name == "PEER_DEAD" || name == "PEER_TIMEOUT_DEAD" || name == "PEER_UNRESPONSIVE" ||
        name == "PEER_NEW") {
      if (!(s.last == "PEER_DEAD" && name == "PEER_UNRESPONSIVE")) s.last = name;
      s.time = time;
    }
  }
  int named = 0;
  for (const auto& key : order) {
    const State& s = peers[key];
    const bool dead = s.last == "PEER_DEAD" || s.last == "PEER_TIMEOUT_DEAD";
    if (!dead && s.last != "PEER_UNRESPONSIVE") continue;
    Finding f;
    f.type = dead ? FindingType::RankDead : FindingType::Unreachable;
    f.confidence = dead ? kStated : kMeasured;
    f.who = s.p.label();
    f.hosts = {s.p.host};
    f.evidence.push_back(fmt::format("ncclras -m: {} at {} (its last state in the stream)", s.last,
                                     s.time.empty() ? "?" : s.time));
    for (size_t i = 0; i < s.lines.size() && i < 5; ++i) f.evidence.push_back(s.lines[i]);
    f.next_step = dead ? "that process is gone: check its host (dmesg, the job's log for its "
                         "last lines); restart the job without it or from a checkpoint"
                       : "watch for PEER_DEAD (60 s) and check that host (ping, ssh, dmesg)";
    e.findings.push_back(std::move(f));
    ++named;
  }
  e.contributed = fmt::format(
      "ncclras event stream: {} about {}; {} dead or unresponsive at the "
      "end",
      plural(events.size(), "event"), plural(peers.size(), "process"), named);
}

}  // namespace collie::evidence::detail
