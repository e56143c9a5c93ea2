// analyze_gen: writes the flight-recorder dumps of a synthetic job (tests/support/synthetic_job.h)
// for analyze_scale.sh. Usage:
//   analyze_gen --ranks N --hang none|frozen-rank|frozen-host|never-joined|opposite-order
//               [--entries 2000] [--format json|torch] [--threads 2] [--list-ranks 1] --out DIR
// --list-ranks 1: pg_config ranks as lists of numbers (dump version 1), which older collie reads.
// Prints "wrote K dumps (B bytes) in S s" and the ranks the analyzer should blame.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "support/synthetic_job.h"

int main(int argc, char** argv) {
  using collie::testing::SyntheticJob;
  collie::testing::SyntheticJobOptions o;
  std::string out, format = "json", hang = "none";
  int threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--ranks") {
      o.ranks = std::stoi(v);
    } else if (k == "--entries") {
      o.entries = std::stoul(v);
    } else if (k == "--hang") {
      hang = v;
    } else if (k == "--format") {
      format = v;
    } else if (k == "--threads") {
      threads = std::stoi(v);
    } else if (k == "--out") {
      out = v;
    } else if (k == "--per-host") {
      o.per_host = std::stoi(v);
    } else if (k == "--list-ranks") {
      o.list_ranks = v == "1";
    } else {
      std::fprintf(stderr, "analyze_gen: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const auto h = collie::testing::hang_named(hang);
  if (out.empty() || !h || o.ranks < 2 || (format != "json" && format != "torch")) {
    std::fprintf(stderr,
                 "usage: analyze_gen --ranks N --hang none|frozen-rank|frozen-host|never-joined|"
                 "opposite-order [--entries 2000] [--format json|torch] --out DIR\n");
    return 2;
  }
  o.hang = *h;
  const SyntheticJob job(o);
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = job.write(out, format == "torch", threads);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uintmax_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(out)) bytes += e.file_size();
  std::string blame;
  for (int r : job.culprits()) blame += fmt::format("{}{}", blame.empty() ? "" : ",", r);
  std::printf("wrote %zu dumps (%ju bytes) in %.1f s; culprits: %s\n", n, bytes, s,
              blame.empty() ? "none" : blame.c_str());
  return 0;
}
