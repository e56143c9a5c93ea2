#include "probes/perf_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "comm/init.h"
#include "core/env.h"
#include "core/error.h"
#include "perf/collective.h"
#include "perf/driver.h"
#include "reports/markup.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

std::string known_collectives() {
  std::string s;
  for (const auto* d : perf::all_collectives()) s += (s.empty() ? "" : ", ") + d->name;
  return s;
}

}  // namespace

perf::PerfOptions perf_check_options(const CheckSpec& c, Millis timeout,
                                     const std::string& where_given) {
  const json& p = c.params;
  const std::string where = where_given.empty() ? fmt::format("check '{}'", c.name) : where_given;
  perf::PerfOptions o;
  const std::string coll = p.value("collective", "");
  if (perf::find_collective(coll) == nullptr)
    throw SpecError(
        fmt::format("{}: unknown collective '{}' (known: {})", where, coll, known_collectives()),
        "perf");
  o.collectives = {coll};
  if (p.contains("min_bytes")) o.min_bytes = parse_bytes(p["min_bytes"], where + ".min_bytes");
  if (p.contains("max_bytes")) o.max_bytes = parse_bytes(p["max_bytes"], where + ".max_bytes");
  if (o.min_bytes > o.max_bytes)
    throw SpecError(fmt::format("{}: min_bytes {} is larger than max_bytes {}", where,
                                reports::size_label(o.min_bytes), reports::size_label(o.max_bytes)),
                    "min_bytes");
  o.step_factor = p.value("step_factor", o.step_factor);
  if (o.step_factor < 2)
    throw SpecError(where + ".step_factor must be an integer >= 2", "step_factor");
  o.scale_iters = !p.contains("iters");
  o.iters = p.value("iters", o.iters);
  if (o.iters < 1) throw SpecError(where + ".iters must be >= 1", "iters");
  o.warmup_iters = p.value("warmup", o.warmup_iters);
  if (p.contains("dtype")) {
    const auto d = parse_dtype(p["dtype"].get<std::string>());
    if (!d)
      throw SpecError(fmt::format("{}.dtype: unknown dtype {} (use nccl-tests names: int8 uint8 "
                                  "int32 uint32 int64 uint64 half float double bfloat16)",
                                  where, spec_value_text(p["dtype"])),
                      "dtype");
    o.dtypes = {*d};
  }
  if (p.contains("op")) {
    const auto op = parse_reduce_op(p["op"].get<std::string>());
    if (!op || *op == ReduceOp::PreMulSum)
      throw SpecError(fmt::format("{}.op: unknown op {} (use sum, prod, max, min or avg)", where,
                                  spec_value_text(p["op"])),
                      "op");
    o.ops = {*op};
  }
  o.placement = perf::Placement::Out;
  o.check_iters = 1;  // #wrong is always a rule: corrupt data never passes acceptance
  o.timeout = timeout;
  const std::vector<int64_t> sizes = perf::sweep_sizes(o);
  for (const char* rule : {"min_busbw_gbps", "max_time_us"}) {
    if (!c.rules.contains(rule)) continue;
    for (const auto& [size, v] : c.rules[rule].items()) {
      const int64_t b = parse_bytes(json(size), fmt::format("{}.rules.{} key", where, rule));
      if (std::find(sizes.begin(), sizes.end(), b) == sizes.end())
        throw SpecError(fmt::format("{}.rules.{}: the sweep {}..{} (x{}) does not measure {}; "
                                    "widen min_bytes/max_bytes",
                                    where, rule, reports::size_label(o.min_bytes),
                                    reports::size_label(o.max_bytes), o.step_factor, size),
                        std::string("rules/") + rule + "/" + size);
    }
  }
  return o;
}

PerfCheckResult run_perf_check(ProbeContext& ctx, const CheckSpec& c) {
  const std::string tag = ctx.tag();
  PerfCheckResult res;
  std::string error;
  try {
    perf::PerfOptions o = perf_check_options(c, ctx.timeout);
    o.hooks = perf::TestHooks::from_env(ctx.env ? *ctx.env : Env::process());
    o.on_hang = ctx.on_hang;
    std::shared_ptr<ProcessGroup> pg = world_group(ctx, tag);
    perf::PerfOutcome out = perf::run_perf(*pg, o, nullptr, COLLIE_VERSION);
    destroy_process_group(*pg);
    res.rows = std::move(out.result.rows);
  } catch (const SpecError&) {
    throw;
  } catch (const std::exception& e) {
    error = e.what();
  }
  const auto reports = gather_to_root(ctx, tag + "/perf_error", error, ctx.timeout * 2);
  if (ctx.rank != 0) return {};
  for (int r = 0; r < ctx.world; ++r) {
    if (!reports[r]) {
      res.missing_ranks.push_back(r);
    } else if (!reports[r]->empty()) {
      res.errors.push_back(fmt::format("rank {} ({}): {}", r, ctx.hosts.at(r), *reports[r]));
    }
  }
  return res;
}

}  // namespace collie::probes
