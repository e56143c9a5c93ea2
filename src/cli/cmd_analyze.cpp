// `collie analyze PATH... [--json]`: explains a hung or slow job from everything given: folders
// of the ranks' flight-recorder dumps (collie's or PyTorch's) and files of other evidence
// (ncclras -f json, nccl-tests -J or text, collie perf / accept / probe -J; src/evidence).
// Typed verdicts (src/diagnose) first, joined across inputs by host, then what each input
// contributed, then the per-group findings of the dumps.
// `collie analyze --live STORE_HOST:PORT`: a running job's live status through the tree of its
// ranks' debug servers (debug_server/live_tree.h: O(log N) levels, a summary whose size does not
// grow with N, verdicts as rank ranges and hosts), then the ranks it names in detail; in a world
// of at most 64 ranks, the same analysis as for dumps on every rank's live flight recorder.
// Addresses are read from the job's store (debug_server/<rank>) before any deadline starts.
// Exit status: 0 no problem found, 1 problems found (culprits named), 2 no usable input.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/env.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/printable.h"
#include "debug/analyzer.h"
#include "debug_server/cluster.h"
#include "debug_server/http_client.h"
#include "debug_server/live_tree.h"
#include "debug_server/live_verdict.h"
#include "debug_server/server.h"
#include "diagnose/dump_verdicts.h"
#include "diagnose/evidence_verdicts.h"
#include "evidence/evidence.h"
#include "store/local_secret.h"
#include "store/store_secret.h"
#include "store/tcp_store.h"

namespace collie::cli {
namespace {

struct AnalyzeArgs {
  std::vector<std::string> paths;  // dump folders and evidence files
  bool json = false;
  int world = -1;
  std::string live;  // STORE_HOST:PORT
  std::string timeout = "2s";
  std::string stall;  // "" = automatic (AnalyzeOptions::stall_after_s)
  std::string token;
};

// --stall in seconds, or -1 (automatic) when not given.
double stall_of(const AnalyzeArgs& a) {
  return a.stall.empty() ? -1 : parse_duration(a.stall).count() / 1000.0;
}

// What `collie analyze PATH...` was given, read: the dumps' analysis (when a folder of dumps
// was among the paths) and the other inputs.
struct Inputs {
  std::optional<Analysis> dumps;
  std::vector<evidence::Evidence> other;
};

// Prints the verdicts, what each input contributed and the analysis of the dumps; exit status 0
// when nothing was found, 1 otherwise.
int report(const Inputs& in, bool json) {
  Diagnosis d;
  if (in.dumps) d = diagnose(*in.dumps, "flight-recorder dumps");
  if (!in.other.empty()) add_evidence(d, in.other);
  std::string out;
  if (json) {
    nlohmann::json j = in.dumps ? to_json_value(*in.dumps) : nlohmann::json::object();
    j.update(to_json_value(d));
    if (!in.other.empty()) j["inputs"] = evidence::evidence_json(in.other).at("inputs");
    out = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    out = to_text(d);
    if (!in.other.empty()) {
      out += "Inputs:\n";
      for (const std::string& s : d.sources) out += "- " + printable(s) + "\n";
    }
    if (in.dumps) out += to_text(*in.dumps);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  const bool found = (in.dumps && !in.dumps->findings.empty()) || !d.verdicts.empty();
  return found ? kExitFailure : kExitOk;
}

// The job's world size: what rank 0's /v1/status says; when rank 0 does not answer, the first
// gap in the store's debug_server/<rank> keys, found in O(log N) checks (and *note says so).
int live_world_size(StoreAddresses& addrs, Millis timeout, const std::string& token,
                    std::string* note) {
  const RankAddress a = addrs.addresses({0}).front();
  std::string why = a.why;
  if (a.state == RankAddress::State::kKnown) {
    http::GetRequest r;
    r.host = a.host;
    r.port = a.port;
    r.target = "/v1/status";
    if (!token.empty() && addrs.store().members_only()) {
      r.headers.emplace_back("Authorization", "Bearer " + token);
    }
    r.deadline = std::chrono::steady_clock::now() + timeout;
    r.max_body_bytes = kMaxFanoutStatusBytes;
    http::Exchange x(std::move(r));
    http::run_all({&x});
    try {
      if (!x.ok()) throw std::runtime_error(x.error());
      if (x.reply().status != 200)
        throw std::runtime_error(fmt::format("HTTP {}", x.reply().status));
      const nlohmann::json j = parse_json_input(x.reply().body, 32);
      const int64_t n = j.at("world_size").get<int64_t>();
      if (n >= 1 && n <= (int64_t{1} << 24)) return static_cast<int>(n);
      throw std::runtime_error(fmt::format("world_size {}", n));
    } catch (const std::exception& e) {
      why = printable(std::string(e.what()).substr(0, 200));
    }
  }
  Store& store = addrs.store();
  auto has = [&store](int64_t r) { return store.check({fmt::format("debug_server/{}", r)}); };
  if (!has(0)) return 0;
  int64_t lo = 0, hi = 1;  // has(lo), hi: not known
  while (hi < (int64_t{1} << 24) && has(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (has(mid) ? lo : hi) = mid;
  }
  *note = fmt::format(
      "world size {} from the store's debug_server/<rank> keys: rank 0 did not say ({}); "
      "--world-size N to give it",
      lo + 1, why);
  return static_cast<int>(lo + 1);
}

// --live: the live-status tree's summary and verdicts, then the ranks it names (what
// /v1/cluster/status serves).
int run_live(const AnalyzeArgs& f) {
  // Every flag is checked before anything connects. A URL's scheme (tcp://, http://, as a
  // user may paste an address) and a trailing '/' are dropped.
  std::string live = f.live;
  for (const char* scheme : {"tcp://", "http://"}) {
    if (live.rfind(scheme, 0) == 0) live.erase(0, std::strlen(scheme));
  }
  if (!live.empty() && live.back() == '/') live.pop_back();
  const size_t colon = live.rfind(':');
  int port = 0;
  // No colon: the digits are empty (data() + npos + 1 would be undefined pointer arithmetic).
  const char* end = live.data() + live.size();
  const char* digits = colon == std::string::npos ? end : live.data() + colon + 1;
  if (live.find("://") != std::string::npos || colon == std::string::npos || colon == 0 ||
      std::from_chars(digits, end, port).ptr != end || digits == end || port < 1 || port > 65535) {
    throw InvalidArgument(fmt::format(
        "{} is not HOST:PORT with a port in 1..65535 (the job's MASTER_ADDR:MASTER_PORT, as "
        "collie perf -np prints it; tcp:// or http:// before it is accepted)",
        quote(f.live)));
  }
  const Millis timeout = parse_duration(f.timeout);
  const double stall_s = stall_of(f) < 0 ? kAutoStallLiveS : stall_of(f);
  TcpStoreOptions o;
  o.host = live.substr(0, colon);
  o.port = static_cast<uint16_t>(port);
  o.timeout = timeout;
  // A job a local launcher started on this host (collie perf -np, collie launch) left its
  // secret for this user: used unless one is exported.
  if (store_secret_from_env().empty() && is_loopback_host(o.host)) {
    if (std::string s = read_local_secret(o.port); !s.empty()) o.secret = std::move(s);
  }
  auto store = std::make_shared<TcpStore>(o);
  // A job that is still starting (its launcher printed this command before the ranks ran):
  // rank 0's address within --timeout.
  try {
    store->wait({"debug_server/0"}, timeout);
  } catch (const Error&) {
  }
  StoreAddresses addrs(store);
  std::string world_note;
  const int world = f.world > 0 ? f.world : live_world_size(addrs, timeout, f.token, &world_note);
  if (world == 0) {
    throw InvalidArgument(
        fmt::format("no debug_server/<rank> keys in the store at {}; start the job with "
                    "COLLIE_DEBUG_PORT set or --debug-port",
                    live));
  }
  TreeQuery tree({0, world}, std::nullopt, addrs, tree_options(*store, world, timeout, f.token));
  const LiveView v = live_view(*store, tree, world, timeout, stall_s, f.token, nullptr);
  std::optional<Diagnosis> d;
  if (v.analysis) d = diagnose(*v.analysis, "live ranks");
  const bool found = !v.report.findings.empty() || (v.analysis && !v.analysis->findings.empty()) ||
                     (d && !d->verdicts.empty());
  if (f.json) {
    nlohmann::json j = live_json(v.report, v.summary);
    if (!world_note.empty()) j["notes"] = {world_note};
    j["details"] = nlohmann::json::array();
    for (const RankView& r : v.details.ranks) {
      j["details"].push_back(r.reachable ? nlohmann::json{{"rank", r.rank}, {"status", r.status}}
                                         : nlohmann::json{{"rank", r.rank}, {"error", r.error}});
    }
    j["analysis"] = v.analysis ? to_json_value(*v.analysis) : nlohmann::json(nullptr);
    if (d) j.update(to_json_value(*d));
    const std::string out = j.dump(2) + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    return found ? kExitFailure : kExitOk;
  }
  std::string out = live_text(v.report, v.summary);
  if (!world_note.empty()) out += "Note: " + world_note + "\n";
  if (v.analysis) {
    out += "\nFlight recorders of every rank (the report collie analyze DUMP_DIR prints):\n" +
           to_text(*d) + to_text(*v.analysis);
  } else if (!v.details.ranks.empty()) {
    out += fmt::format("\nStatus of {} rank{} named above:\n", v.details.ranks.size(),
                       v.details.ranks.size() == 1 ? "" : "s");
    for (const RankView& r : v.details.ranks) out += "- " + detail_line(r) + "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return found ? kExitFailure : kExitOk;
}

// A rank's own dump file given where its folder is meant.
bool is_dump_file(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.rfind("collie_fr_rank_", 0) == 0 || name.rfind("nccl_trace_rank_", 0) == 0;
}

int run_analyze(const AnalyzeArgs& a) {
  std::vector<std::string> errors;
  std::vector<std::string> dirs;
  Inputs in;
  // Every path is checked before anything is read at length.
  for (const std::string& p : a.paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      dirs.push_back(p);
    } else if (is_dump_file(p)) {
      throw InvalidArgument(fmt::format(
          "{} is one rank's dump: give the folder that holds every rank's dumps", quote(p)));
    }
  }
  for (const std::string& p : a.paths) {
    if (std::find(dirs.begin(), dirs.end(), p) == dirs.end())
      in.other.push_back(evidence::read_evidence(p));
  }
  DumpFold fold;
  for (const std::string& dir : dirs) fold_dump_dir(dir, fold, errors);
  if (!dirs.empty() && fold.size() == 0 && !errors.empty()) {
    // Every dump was unusable: say why, one line per file, and nothing else.
    for (const auto& e : errors) {
      std::fprintf(stderr, "collie analyze: %s\n", printable(e).c_str());
    }
    return kExitUsage;
  }
  for (const auto& e : errors) {
    std::fprintf(stderr, "collie analyze: skipped %s\n", printable(e).c_str());
  }
  if (!dirs.empty() && fold.size() == 0) {
    std::string where;
    for (const std::string& d : dirs) where += (where.empty() ? "" : ", ") + d;
    std::fprintf(
        stderr,
        "collie analyze: no collie_fr_rank_*.json nor PyTorch dump (nccl_trace_rank_<rank>) "
        "in %s (set COLLIE_FR_DUMP_DIR on every "
        "rank; dumps are written on timeout, error, SIGUSR1 or a store dump_request)\n",
        printable(where).c_str());
    return kExitUsage;
  }
  if (!dirs.empty()) {
    AnalyzeOptions o;
    o.expected_world = a.world;
    o.stall_after_s = stall_of(a);
    in.dumps = fold.analyze(o);
  }
  return report(in, a.json);
}

const Command kCommand{
    "analyze", "explain a hang from flight-recorder dumps (COLLIE_FR_DUMP_DIR) or a live job",
    [](CLI::App& sub) {
      auto args = std::make_shared<AnalyzeArgs>();
      auto* dir = sub.add_option(
          "paths", args->paths,
          "folders of the ranks' dumps, and files of other evidence: ncclras -f json, "
          "nccl-tests -J or text, collie perf / accept / probe -J (any mix)");
      auto* live = sub.add_option(
          "--live", args->live,
          "analyze a running job instead: its store HOST:PORT, as collie perf -np prints it "
          "(MASTER_ADDR:MASTER_PORT; ranks started with --debug-port)");
      live->excludes(dir);
      sub.add_option("--timeout", args->timeout,
                     "--live: how long a rank may take to answer, per level of the tree (and per "
                     "rank for the ranks fetched in detail)")
          ->capture_default_str();
      sub.add_option("--stall", args->stall,
                     "how long an op must have been in flight (and a rank idle) before it is a "
                     "problem; default: 10s live, 1s for dumps requested from a running job "
                     "(POST /v1/dump, SIGUSR1), 0 for dumps written on a failure");
      sub.add_option("--token", args->token, "--live: bearer token (COLLIE_DEBUG_TOKEN)");
      sub.add_flag("--json", args->json, "machine-readable output");
      sub.add_option("--world-size", args->world,
                     "expected number of ranks (default: from the dumps)");
      return [args, dir, live] {
        if (args->world != -1 && (args->world < 1 || args->world > kMaxAnalyzeWorld)) {
          throw InvalidArgument(
              fmt::format("--world-size {} is not in 1..{}", args->world, kMaxAnalyzeWorld));
        }
        if (live->count() > 0) return run_live(*args);
        if (dir->count() == 0) {
          std::fprintf(stderr,
                       "collie analyze: give a DUMP_DIR (and evidence files) or --live "
                       "STORE_HOST:PORT\n");
          return kExitUsage;
        }
        return run_analyze(*args);
      };
    }};

}  // namespace

const Command& analyze_command() { return kCommand; }

}  // namespace collie::cli
