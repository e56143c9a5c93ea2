#include "debug/analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "comm/rendezvous.h"
#include "core/error.h"
#include "debug/flight_recorder.h"

namespace collie {
namespace {

using nlohmann::json;

std::string op_of(const std::string& profiling_name) {
  auto colon = profiling_name.find(':');
  std::string op = colon == std::string::npos ? profiling_name : profiling_name.substr(colon + 1);
  auto space = op.find(' ');
  return space == std::string::npos ? op : op.substr(0, space);
}

template <typename T>
T get_or(const json& j, const char* key, T def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  return it->get<T>();
}

std::string rank_word(const std::vector<int>& r) {
  return fmt::format("{} {}", r.size() == 1 ? "rank" : "ranks", format_ranks(r));
}

struct GroupView {
  std::string pg_id;
  std::string desc;
  std::vector<int> members;
  // Per member with a dump: its collectives by seq, and p2p entries in order.
  std::map<int, std::map<uint64_t, const DumpEntry*>> coll;
  std::map<int, std::vector<const DumpEntry*>> p2p;
  std::map<int, const RankDump*> dumps;
};

// Majority value of `key` among entries; ties go to the value held by the lowest rank.
template <typename F>
void compare_field(const GroupView& g, uint64_t seq, const std::map<int, const DumpEntry*>& at,
                   const char* kind, const char* what, F key, std::vector<Finding>& out) {
  std::map<std::string, std::vector<int>> by;
  for (const auto& [r, e] : at) by[key(*e)].push_back(r);
  if (by.size() < 2) return;
  auto best = by.begin();
  for (auto it = by.begin(); it != by.end(); ++it) {
    if (it->second.size() > best->second.size() ||
        (it->second.size() == best->second.size() && it->second.front() < best->second.front())) {
      best = it;
    }
  }
  for (const auto& [val, ranks] : by) {
    if (val == best->first) continue;
    for (int r : ranks) {
      Finding f;
      f.pg_id = g.pg_id;
      f.kind = kind;
      f.culprits = {r};
      f.seq = seq;
      f.message = fmt::format(
          "Culprit rank {}; Error type: {}, Expected {}: '{}' does not match found {}: '{}' "
          "(collective sequence number {}; {} called '{}')",
          r, kind, what, best->first, what, val, seq, rank_word(best->second), best->first);
      out.push_back(std::move(f));
    }
  }
}

void analyze_collectives(const GroupView& g, std::vector<Finding>& out) {
  uint64_t max_seq = 0;
  std::map<int, uint64_t> first_seq, last_seq;
  for (const auto& [r, m] : g.coll) {
    first_seq[r] = m.empty() ? 0 : m.begin()->first;
    last_seq[r] = m.empty() ? 0 : m.rbegin()->first;
    max_seq = std::max(max_seq, last_seq[r]);
  }
  bool reported_join = false, reported_mismatch = false;
  for (uint64_t s = 1; s <= max_seq && !(reported_join && reported_mismatch); ++s) {
    std::map<int, const DumpEntry*> at;
    std::vector<int> absent;
    for (const auto& [r, m] : g.coll) {
      auto it = m.find(s);
      if (it != m.end()) {
        at[r] = it->second;
      } else if (s > last_seq[r]) {
        absent.push_back(r);  // never reached s (earlier seqs lost to a wrapped ring prove nothing)
      }
    }
    if (!reported_join && !absent.empty() && !at.empty()) {
      reported_join = true;
      Finding f;
      f.pg_id = g.pg_id;
      f.kind = "NOT_ALL_JOINED";
      f.culprits = absent;
      f.seq = s;
      const DumpEntry* e = at.begin()->second;
      std::string detail;
      for (int r : absent) {
        const auto& m = g.coll.at(r);
        const RankDump::Group& st = g.dumps.at(r)->groups.at(g.pg_id);
        if (m.empty()) {
          detail += fmt::format("\n  [{}] recorded no collective in this group", r);
        } else {
          const DumpEntry* last = m.rbegin()->second;
          detail += fmt::format(
              "\n  [{}] finished collective #{}, but didn't join collective #{} "
              "(last recorded: {} #{}, {})",
              r, st.last_completed, s, last->op, m.rbegin()->first, last->state);
        }
      }
      f.message = fmt::format(
          "Not all ranks joining collective, sequence number: {}\n  {} ({}) joined; missing {}{}",
          s, rank_word([&] {
            std::vector<int> v;
            for (const auto& [r, _] : at) v.push_back(r);
            return v;
          }()),
          e->op, rank_word(absent), detail);
      out.push_back(std::move(f));
    }
    if (!reported_mismatch && at.size() >= 2) {
      const size_t before = out.size();
      compare_field(
          g, s, at, "COLLECTIVE_TYPE_MISMATCH", "collective type",
          [](const DumpEntry& e) { return e.op; }, out);
      if (out.size() == before) {
        compare_field(
            g, s, at, "SIZE_MISMATCH", "input sizes", [](const DumpEntry& e) { return e.sizes; },
            out);
        compare_field(
            g, s, at, "DTYPE_MISMATCH", "input dtypes", [](const DumpEntry& e) { return e.dtypes; },
            out);
        compare_field(
            g, s, at, "ROOT_MISMATCH", "root",
            [](const DumpEntry& e) { return std::to_string(e.root); }, out);
      }
      reported_mismatch = out.size() != before;
    }
  }
}

void analyze_p2p(const GroupView& g, std::vector<Finding>& out) {
  // k-th send r->q pairs with q's k-th recv from r.
  for (const auto& [r, ents] : g.p2p) {
    if (g.dumps.at(r)->wrapped) continue;
    std::map<int, std::vector<const DumpEntry*>> sends;
    for (const DumpEntry* e : ents) {
      if (e->op == "send") sends[e->peer].push_back(e);
    }
    for (const auto& [q, ss] : sends) {
      std::vector<const DumpEntry*> rs;
      auto it = g.p2p.find(q);
      if (it == g.p2p.end() || g.dumps.at(q)->wrapped) continue;
      for (const DumpEntry* e : it->second) {
        if (e->op == "recv" && e->peer == r) rs.push_back(e);
      }
      for (size_t k = 0; k < std::max(ss.size(), rs.size()); ++k) {
        Finding f;
        f.pg_id = g.pg_id;
        f.seq = k + 1;
        if (k < ss.size() && k < rs.size()) {
          if (ss[k]->sizes == rs[k]->sizes && ss[k]->dtypes == rs[k]->dtypes) continue;
          f.kind = "P2P_MISMATCH";
          f.culprits = {r, q};
          f.message =
              fmt::format("send #{} from rank {} ({} {}) does not match recv on rank {} ({} {})",
                          k + 1, r, ss[k]->dtypes, ss[k]->sizes, q, rs[k]->dtypes, rs[k]->sizes);
        } else if (k < ss.size()) {
          f.kind = "UNMATCHED_P2P";
          f.culprits = {q};
          f.message = fmt::format(
              "Culprit rank {}; Error type: UNMATCHED_P2P, rank {} called send #{} to rank {} ({} "
              "{}, {}) but rank {} never posted the matching recv",
              q, r, k + 1, q, ss[k]->dtypes, ss[k]->sizes, ss[k]->state, q);
        } else {
          f.kind = "UNMATCHED_P2P";
          f.culprits = {r};
          f.message = fmt::format(
              "Culprit rank {}; Error type: UNMATCHED_P2P, rank {} called recv #{} from rank {} "
              "({} {}, {}) but rank {} never posted the matching send",
              r, q, k + 1, r, rs[k]->dtypes, rs[k]->sizes, rs[k]->state, r);
        }
        out.push_back(std::move(f));
        break;
      }
    }
  }
}

}  // namespace

RankDump parse_dump(const std::string& text) {
  RankDump d;
  try {
    const json j = json::parse(text);
    d.rank = j.at("rank").get<int>();
    d.world_size = get_or<int>(j, "world_size", 0);
    d.wrapped = get_or<bool>(j, "wrapped", false);
    d.buffer_size = get_or<uint64_t>(j, "buffer_size", 0);
    d.total_recorded = get_or<uint64_t>(j, "total_recorded", 0);
    d.reason = get_or<std::string>(j, "reason", "");
    for (const auto& [id, c] : j.at("pg_config").items()) {
      RankDump::Group g;
      g.desc = get_or<std::string>(c, "desc", "");
      g.ranks = c.at("ranks").get<std::vector<int>>();
      if (auto st = j.at("pg_status").find(id); st != j.at("pg_status").end()) {
        g.last_enqueued = get_or<uint64_t>(*st, "last_enqueued_collective", 0);
        g.last_started = get_or<uint64_t>(*st, "last_started_collective", 0);
        g.last_completed = get_or<uint64_t>(*st, "last_completed_collective", 0);
      }
      d.groups[id] = std::move(g);
    }
    for (const auto& e : j.at("entries")) {
      DumpEntry x;
      x.record_id = e.at("record_id").get<uint64_t>();
      x.pg_id = e.at("pg_id").get<std::string>();
      x.collective_seq_id = get_or<uint64_t>(e, "collective_seq_id", 0);
      x.p2p_seq_id = get_or<uint64_t>(e, "p2p_seq_id", 0);
      x.profiling_name = e.at("profiling_name").get<std::string>();
      x.op = op_of(x.profiling_name);
      x.sizes = e.value("input_sizes", json::array()).dump();
      x.dtypes = e.value("input_dtypes", json::array()).dump();
      x.state = e.at("state").get<std::string>();
      x.failed = get_or<bool>(e, "failed", false);
      x.is_p2p = get_or<bool>(e, "is_p2p", false);
      x.root = get_or<int>(e, "root", -1);
      x.peer = get_or<int>(e, "peer", -1);
      d.entries.push_back(std::move(x));
    }
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("not a collie flight-recorder dump: {}", e.what()));
  }
  return d;
}

std::vector<RankDump> load_dump_dir(const std::string& dir, std::vector<std::string>& errors) {
  namespace fs = std::filesystem;
  std::vector<RankDump> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InvalidArgument(fmt::format("'{}' is not a directory (pass COLLIE_FR_DUMP_DIR)", dir));
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("collie_fr_rank_", 0) == 0 && e.path().extension() == ".json") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    try {
      out.push_back(parse_dump(ss.str()));
    } catch (const std::exception& e) {
      errors.push_back(fmt::format("{}: {}", p.string(), e.what()));
    }
  }
  return out;
}

std::vector<int> Analysis::culprits() const {
  std::set<int> s;
  for (const auto& f : findings) s.insert(f.culprits.begin(), f.culprits.end());
  return {s.begin(), s.end()};
}

Analysis analyze(const std::vector<RankDump>& dumps, int expected_world) {
  Analysis a;
  a.world_size = expected_world;
  std::map<std::string, GroupView> groups;
  for (const RankDump& d : dumps) {
    a.ranks_with_dumps.push_back(d.rank);
    if (expected_world < 0) a.world_size = std::max(a.world_size, d.world_size);
    for (const auto& [id, g] : d.groups) {
      GroupView& v = groups[id];
      v.pg_id = id;
      v.desc = g.desc;
      if (v.members.empty()) v.members = g.ranks;
      v.dumps[d.rank] = &d;
      v.coll[d.rank];
      v.p2p[d.rank];
    }
    for (const DumpEntry& e : d.entries) {
      if (e.is_p2p) {
        groups[e.pg_id].p2p[d.rank].push_back(&e);
      } else {
        groups[e.pg_id].coll[d.rank][e.collective_seq_id] = &e;
      }
    }
  }
  std::sort(a.ranks_with_dumps.begin(), a.ranks_with_dumps.end());
  for (int r = 0; r < a.world_size; ++r) {
    if (std::binary_search(a.ranks_with_dumps.begin(), a.ranks_with_dumps.end(), r)) continue;
    a.findings.push_back(Finding{
        "",
        "MISSING_DUMP",
        {r},
        0,
        fmt::format("Culprit rank {}; Error type: MISSING_DUMP, rank {} left no flight-recorder "
                    "dump: the process died or hung before it could write one (or does not "
                    "share COLLIE_FR_DUMP_DIR); check its log and exit status",
                    r, r)});
  }
  for (const RankDump& d : dumps) {
    if (d.wrapped) {
      a.findings.push_back(Finding{
          "",
          "RING_WRAPPED",
          {},
          0,
          fmt::format("rank {}'s ring wrapped: it kept the last {} of {} ops, older evidence is "
                      "lost (raise COLLIE_FR_BUFFER_SIZE)",
                      d.rank, d.buffer_size, d.total_recorded)});
    }
  }
  for (auto& [id, g] : groups) {
    analyze_collectives(g, a.findings);
    analyze_p2p(g, a.findings);
    for (const auto& [r, m] : g.coll) {
      for (const auto& [s, e] : m) {
        if (e->state != "completed") {
          a.findings.push_back(Finding{id,
                                       "STUCK",
                                       {},
                                       s,
                                       fmt::format("rank {} is in {} #{} of group {} (state {})", r,
                                                   e->op, s, id, e->state)});
          break;
        }
      }
    }
  }
  return a;
}

std::string to_text(const Analysis& a) {
  std::string out =
      fmt::format("collie analyze: {} of {} ranks left dumps ({})\n", a.ranks_with_dumps.size(),
                  a.world_size, format_ranks(a.ranks_with_dumps));
  if (a.findings.empty())
    return out + "No problem found: every rank agrees on every recorded op.\n";
  std::string pg = "-";
  for (const Finding& f : a.findings) {
    if (f.pg_id != pg) {
      pg = f.pg_id;
      out += pg.empty() ? "Evidence:\n" : fmt::format("Group {}:\n", pg);
    }
    out += fmt::format("- {}\n", f.message);
  }
  const auto c = a.culprits();
  out += c.empty()
             ? "No culprit rank identified.\n"
             : fmt::format("Culprit {}: {}\n", c.size() == 1 ? "rank" : "ranks", format_ranks(c));
  return out;
}

std::string to_json(const Analysis& a) {
  json j;
  j["world_size"] = a.world_size;
  j["ranks_with_dumps"] = a.ranks_with_dumps;
  j["culprits"] = a.culprits();
  j["findings"] = json::array();
  for (const Finding& f : a.findings) {
    j["findings"].push_back({{"pg_id", f.pg_id},
                             {"kind", f.kind},
                             {"culprits", f.culprits},
                             {"seq", f.seq},
                             {"message", f.message}});
  }
  return j.dump(2);
}

}  // namespace collie
