#pragma once
// The rank-0 result sink used by `collie perf`: the nccl-tests table on a FILE (stdout), the
// straggler and summary lines, optional JSON (rewritten atomically after every row: nccl-tests'
// version-3 keys beside collie.perf.v1's, see reports/nccl_tests_json.h), CSV and
// JSONL (appended and flushed per row), and a progress bar on stderr only when it is a terminal.
// Not thread-safe (the driver calls it from one thread).
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "perf/driver.h"
#include "reports/nccl_tests_json.h"
#include "reports/row_writers.h"

namespace collie::perf {

struct OutputOptions {
  std::string json_path;      // -J
  std::string csv_path;       // --csv
  std::string jsonl_path;     // --jsonl
  bool timestamps = false;    // -S: append the wall-clock time to every row
  bool report_iters = false;  // -I: nccl-tests' per-iteration columns (i_min .. i_cv%)
  bool progress = false;      // draw a progress bar on stderr (callers pass isatty(2))
  int cycles = 1;             // -N (0 = a soak): the bar names the cycle when not 1
  std::map<std::string, std::string> flags;  // recorded in the JSON run metadata
  // The run as nccl-tests' JSON keys record it (the -J file carries both layouts).
  reports::NcclTestsConfig nccl;
};

class ReportSink : public ResultSink {
 public:
  // Opens the CSV/JSONL files now, so a bad path fails before any benchmarking.
  ReportSink(std::FILE* table, OutputOptions o);
  ~ReportSink() override;

  void run_started(const reports::RunMeta& meta) override;
  void collective_started(const reports::TableHeader& h) override;
  void row(const reports::ResultRow* out, const reports::ResultRow* in) override;
  void collective_finished(const std::string& collective,
                           const std::vector<reports::ResultRow>& rows,
                           const reports::Summary& summary) override;
  void note(const std::string& line) override;
  void progress(double fraction) override;
  // In a soak the JSON file holds the current cycle only (CSV/JSONL keep every row).
  void cycle_started(int cycle, bool soak) override;
  // Prints the "Is this normal?" lines when result.capacity is set and writes the final JSON
  // (with the summary). Call once after run_perf returns.
  void finish(const reports::RunResult& result);

 private:
  void clear_progress();
  void write_json(const reports::RunResult& r) const;
  std::FILE* table_;
  OutputOptions o_;
  reports::RunResult partial_;
  std::unique_ptr<reports::CsvWriter> csv_;
  std::unique_ptr<reports::JsonlWriter> jsonl_;
  bool bar_shown_ = false;
  int cycle_ = 0;
};

}  // namespace collie::perf
