#include "probes/perf_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/env.h"
#include "core/error.h"
#include "core/size.h"
#include "perf/driver.h"
#include "stack/init.h"

namespace collie::probes {
using json = nlohmann::json;

perf::PerfOptions perf_check_options(const CheckSpec& c, Millis timeout,
                                     const std::string& where_given) {
  const json& p = c.params;
  const std::string where = where_given.empty() ? fmt::format("check '{}'", c.name) : where_given;
  perf::PerfOptions o;
  // The same conversions and sweep rules as `collie perf`'s flags (perf/options.h), the keys
  // standing for the flags: collective, min_bytes (-b), max_bytes (-e), step_bytes (-i),
  // step_factor (-f), iters (-n), warmup (-w), dtype (-d), op (-o).
  try {
    o.collectives = perf::parse_collectives({p.value("collective", "")}, false, "perf");
    if (p.contains("min_bytes")) o.min_bytes = parse_bytes(p["min_bytes"], where + ".min_bytes");
    if (p.contains("max_bytes")) o.max_bytes = parse_bytes(p["max_bytes"], where + ".max_bytes");
    if (p.contains("step_bytes"))
      o.step_bytes = parse_bytes(p["step_bytes"], where + ".step_bytes");
    o.step_factor = p.value("step_factor", o.step_factor);
    perf::check_sweep(o, {"min_bytes", "max_bytes", "step_bytes", "step_factor"});
    if (p.contains("dtype"))
      o.dtypes = perf::parse_dtypes(p["dtype"].get<std::string>(), false, "dtype");
    if (p.contains("op")) o.ops = perf::parse_ops(p["op"].get<std::string>(), false, "op");
  } catch (const perf::SettingError& e) {
    throw SpecError(fmt::format("{}: {}", where, e.what()), e.setting());
  }
  o.scale_iters = !p.contains("iters");
  o.iters = p.value("iters", o.iters);
  if (o.iters < 1) throw SpecError(where + ".iters must be >= 1", "iters");
  o.warmup_iters = p.value("warmup", o.warmup_iters);
  o.placement = perf::Placement::Out;
  o.check_iters = 1;  // #wrong is always a rule: corrupt data never passes acceptance
  o.timeout = timeout;
  const std::vector<int64_t> sizes = perf::sweep_sizes(o);
  for (const char* rule : {"min_busbw_gbps", "max_time_us"}) {
    if (!c.rules.contains(rule)) continue;
    for (const auto& [size, v] : c.rules[rule].items()) {
      const int64_t b = parse_bytes(json(size), fmt::format("{}.rules.{} key", where, rule));
      if (std::find(sizes.begin(), sizes.end(), b) == sizes.end())
        throw SpecError(fmt::format("{}.rules.{}: the sweep {}..{} ({}) does not measure {}; "
                                    "widen min_bytes/max_bytes",
                                    where, rule, size_label(o.min_bytes), size_label(o.max_bytes),
                                    o.step_factor > 1 ? fmt::format("x{}", o.step_factor)
                                                      : "+" + size_label(o.step_bytes),
                                    size),
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
    res.store_host = pg->info().store_host;
    destroy_process_group(*pg);
    res.rows = std::move(out.result.rows);
    res.meta = std::move(out.result.meta);
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
