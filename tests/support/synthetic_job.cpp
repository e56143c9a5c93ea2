#include "support/synthetic_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/atomic_file.h"
#include "core/clock.h"
#include "debug/flight_recorder.h"
#include "debug/rank_ranges.h"
#include "debug/torch_dump.h"

namespace collie::testing {
namespace {

constexpr int kOpsPerStep = 5;
// The op each step runs at each position: which group, what, how many elements.
enum class Grp { Tp, Dp, Aux, World };
struct StepOp {
  Grp group;
  OpType type;
  size_t count;
};
constexpr StepOp kStep[kOpsPerStep] = {{Grp::Tp, OpType::AllGather, 4096},
                                       {Grp::Tp, OpType::ReduceScatter, 32768},
                                       {Grp::Dp, OpType::AllReduce, 262144},
                                       {Grp::Aux, OpType::AllReduce, 1024},
                                       {Grp::World, OpType::AllReduce, 1}};
// One step's op on one rank takes this long, and the ranks enter it this far apart.
constexpr int64_t kOpNs = 1'000'000;
constexpr int64_t kSkewNs = 20'000;

// The order a rank runs the last step's ops in (positions into kStep).
std::vector<int> last_step(const SyntheticJobOptions& o, int host) {
  std::vector<int> order = {0, 1, 2, 3, 4};
  if (o.hang == Hang::OppositeOrder && host % 2 == 1) std::swap(order[3], order[4]);
  return order;
}

// Elements of the largest op: one buffer every rank's TensorViews point into (never read).
std::vector<float>& buffer() {
  static std::vector<float> b(262144);
  return b;
}

}  // namespace

std::optional<Hang> hang_named(std::string_view name) {
  for (Hang h :
       {Hang::None, Hang::FrozenRank, Hang::FrozenHost, Hang::NeverJoined, Hang::OppositeOrder}) {
    if (name == hang_name(h)) return h;
  }
  return std::nullopt;
}

const char* hang_name(Hang h) {
  switch (h) {
    case Hang::None:
      return "none";
    case Hang::FrozenRank:
      return "frozen-rank";
    case Hang::FrozenHost:
      return "frozen-host";
    case Hang::NeverJoined:
      return "never-joined";
    case Hang::OppositeOrder:
      return "opposite-order";
  }
  return "?";
}

SyntheticJob::SyntheticJob(SyntheticJobOptions o) : o_(o) {
  per_host_ = o_.per_host > 0 ? o_.per_host : std::max(1, std::min(8, o_.ranks / 2));
  if (o_.culprit < 0) o_.culprit = (o_.ranks / 2 + 1) % o_.ranks;
  steps_ = o_.entries / kOpsPerStep + 3;  // each ring wraps
  // The last step, simulated: an op completes once every member of its group is at it.
  const int n = o_.ranks;
  const int hosts = (n + per_host_ - 1) / per_host_;
  std::vector<std::vector<int>> order(n);
  for (int r = 0; r < n; ++r)
    order[r] = stopped(r) ? std::vector<int>{} : last_step(o_, r / per_host_);
  done_.assign(n, 0);
  // A group instance: its kind and index (tp: host, dp: local rank).
  auto group_of = [&](int r, Grp g) {
    switch (g) {
      case Grp::Tp:
        return r / per_host_;
      case Grp::Dp:
        return hosts + r % per_host_;
      case Grp::Aux:
        return hosts + per_host_;
      case Grp::World:
        return hosts + per_host_ + 1;
    }
    return 0;
  };
  std::vector<int> size(hosts + per_host_ + 2, 0);
  for (int r = 0; r < n; ++r) {
    for (Grp g : {Grp::Tp, Grp::Dp, Grp::Aux, Grp::World}) ++size[group_of(r, g)];
  }
  for (bool progress = true; progress;) {
    progress = false;
    // The members of each group instance waiting at their next op of it.
    std::vector<std::vector<int>> at(size.size());
    for (int r = 0; r < n; ++r) {
      if (done_[r] < static_cast<int>(order[r].size()))
        at[group_of(r, kStep[order[r][done_[r]]].group)].push_back(r);
    }
    for (size_t gi = 0; gi < at.size(); ++gi) {
      if (at[gi].empty() || static_cast<int>(at[gi].size()) != size[gi]) continue;
      for (int r : at[gi]) ++done_[r];
      progress = true;
    }
  }
  for (int r = 0; r < n && failed_rank_ < 0; ++r) {
    if (done_[r] < static_cast<int>(order[r].size())) failed_rank_ = r;
  }
}

bool SyntheticJob::stopped(int rank) const {
  switch (o_.hang) {
    case Hang::FrozenRank:
    case Hang::NeverJoined:
      return rank == o_.culprit;
    case Hang::FrozenHost:
      return rank / per_host_ == o_.culprit / per_host_;
    default:
      return false;
  }
}

std::string SyntheticJob::host(int rank) const {
  return fmt::format("node{:04}", rank / per_host_ + 1);
}

std::vector<int> SyntheticJob::culprits() const {
  std::vector<int> out;
  if (o_.hang == Hang::None || o_.hang == Hang::OppositeOrder) return out;
  for (int r = 0; r < o_.ranks; ++r) {
    if (stopped(r)) out.push_back(r);
  }
  return out;
}

std::string SyntheticJob::dump(int rank, bool torch) const {
  if (o_.hang == Hang::NeverJoined && rank == o_.culprit) return "";
  const int n = o_.ranks;
  const int h = rank / per_host_, local = rank % per_host_;
  FakeClock clock;
  FlightRecorder fr(o_.entries, &clock);
  auto group = [&](std::string id, std::string desc, std::vector<int> members) {
    auto g = std::make_shared<GroupTrace>();
    g->pg_id = std::move(id);
    g->desc = std::move(desc);
    g->backend = "nccl";
    g->global_rank = rank;
    g->global_ranks = std::move(members);
    g->rank = static_cast<int>(std::find(g->global_ranks.begin(), g->global_ranks.end(), rank) -
                               g->global_ranks.begin());
    fr.add_group(g);
    return g;
  };
  std::vector<int> all(n), tp, dp;
  for (int r = 0; r < n; ++r) all[r] = r;
  for (int r = h * per_host_; r < std::min(n, (h + 1) * per_host_); ++r) tp.push_back(r);
  for (int r = local; r < n; r += per_host_) dp.push_back(r);
  const std::shared_ptr<GroupTrace> groups[] = {
      group(fmt::format("tp{}", h), "tensor_parallel", tp),
      group(fmt::format("dp{}", local), "data_parallel", dp), group("1", "aux_pg", all),
      group("0", "default_pg", all)};
  uint64_t op_id = 0;
  auto run = [&](int pos, bool complete, bool fail) {
    const StepOp& s = kStep[pos];
    GroupTrace& g = *groups[static_cast<int>(s.group)];
    OpCall c;
    c.type = s.type;
    c.input = TensorView::cpu(buffer().data(), s.count, DType::BFloat16);
    c.output = c.input;
    c.seq = ++g.last_enqueued_collective;
    c.timeout = Millis(600000);
    const uint64_t id = fr.record(g, ++op_id, c);
    fr.mark_started(id);
    g.last_started_collective = c.seq;
    if (!complete) return;
    clock.advance(std::chrono::nanoseconds(kOpNs / 2));
    fr.mark_completed(id, fail);
    if (!fail) g.last_completed_collective.raise(g.completing.mine(), c.seq);
  };
  // Ranks enter each op a little apart (the last host a few microseconds behind the first).
  clock.advance(
      std::chrono::nanoseconds(static_cast<int64_t>(h % 16) * kSkewNs / 16 + local * 100));
  for (size_t step = 0; step + 1 < steps_; ++step) {
    for (int pos = 0; pos < kOpsPerStep; ++pos) {
      run(pos, true, false);
      clock.advance(std::chrono::nanoseconds(kOpNs / 2));
    }
  }
  const std::vector<int> order = stopped(rank) ? std::vector<int>{} : last_step(o_, h);
  for (int i = 0; i < done_[rank]; ++i) {
    run(order[i], true, false);
    clock.advance(std::chrono::nanoseconds(kOpNs / 2));
  }
  const bool hung = o_.hang != Hang::None;
  if (done_[rank] < static_cast<int>(order.size())) run(order[done_[rank]], false, false);
  // The dumps: the hang's, hung_for_s after the step began; a healthy job's, a moment later.
  clock.advance(std::chrono::nanoseconds(hung ? static_cast<int64_t>(o_.hung_for_s * 1e9) : kOpNs));
  if (rank == failed_rank_) {
    // Its timeout fired: the op in flight fails, and its failure made every rank dump.
    std::vector<FrEntry> entries = fr.snapshot();
    fr.mark_completed(entries.back().record_id, true);
  }
  const DumpTrigger trigger = hung ? DumpTrigger::Failure : DumpTrigger::Request;
  FrSnapshot snap = fr.full_snapshot();
  snap.host = host(rank);
  if (torch) return torch_dump_pickle(snap, "");
  std::string text =
      fr.dump_json(rank, hung ? "all_reduce timed out" : "dump_request", snap, false, trigger);
  if (!o_.list_ranks) return text;
  nlohmann::json j = nlohmann::json::parse(text);
  j["version"] = 1;
  for (auto& [id, g] : j["pg_config"].items())
    g["ranks"] = parse_rank_ranges(g["ranks"].get<std::string>(), o_.ranks, o_.ranks);
  return j.dump(1);
}

size_t SyntheticJob::write(const std::string& dir, bool torch, int threads) const {
  std::filesystem::create_directories(dir);
  std::atomic<int> next{0};
  std::atomic<size_t> written{0};
  auto work = [&] {
    for (int r = next++; r < o_.ranks; r = next++) {
      const std::string bytes = dump(r, torch);
      if (bytes.empty()) continue;
      const std::string name =
          torch ? fmt::format("{}{}", kTorchDumpPrefix, r) : fr_dump_file_name(r);
      write_file_atomic((std::filesystem::path(dir) / name).string(), bytes);
      ++written;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return written.load();
}

}  // namespace collie::testing
