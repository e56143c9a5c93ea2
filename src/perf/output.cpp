#include "perf/output.h"

#include <fmt/format.h>

#include <ctime>

#include "reports/json_io.h"
#include "reports/table.h"

namespace collie::perf {

ReportSink::ReportSink(std::FILE* table, OutputOptions o) : table_(table), o_(std::move(o)) {
  if (!o_.csv_path.empty()) csv_ = std::make_unique<reports::CsvWriter>(o_.csv_path);
  if (!o_.jsonl_path.empty()) jsonl_ = std::make_unique<reports::JsonlWriter>(o_.jsonl_path);
}

ReportSink::~ReportSink() { clear_progress(); }

void ReportSink::run_started(const reports::RunMeta& meta) {
  partial_.meta = meta;
  partial_.meta.flags = o_.flags;
  std::fprintf(table_, "# collie version %s backend %s world size %d\n", meta.version.c_str(),
               meta.backend.c_str(), meta.world_size);
  std::fflush(table_);
  if (!o_.json_path.empty()) write_json(partial_);
}

void ReportSink::collective_started(const reports::TableHeader& h) {
  clear_progress();
  o_.nccl.pids = h.pids;
  std::fputs(reports::format_header(h).c_str(), table_);
  std::fflush(table_);
}

void ReportSink::row(const reports::ResultRow* out, const reports::ResultRow* in) {
  clear_progress();
  std::string line = reports::format_row(out, in, o_.report_iters);
  if (o_.timestamps) {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "  %Y-%m-%d %H:%M:%S", &tm);
    line += buf;
  }
  std::fprintf(table_, "%s\n", line.c_str());
  std::fflush(table_);
  for (const reports::ResultRow* r : {out, in}) {
    if (r == nullptr) continue;
    partial_.rows.push_back(*r);
    if (csv_) csv_->write(*r);
    if (jsonl_) jsonl_->write(*r);
  }
  if (!o_.json_path.empty()) write_json(partial_);
}

void ReportSink::collective_finished(const std::string& collective,
                                     const std::vector<reports::ResultRow>& rows,
                                     const reports::Summary& summary) {
  clear_progress();
  if (o_.report_iters)
    std::fputs(
        reports::format_arrival_lines(rows, partial_.meta.hosts, partial_.meta.world_size).c_str(),
        table_);
  std::fputs(reports::format_straggler_line(rows, summary).c_str(), table_);
  std::fputs(reports::format_trailer(collective, summary).c_str(), table_);
  std::fflush(table_);
}

void ReportSink::note(const std::string& line) {
  clear_progress();
  std::fprintf(table_, "%s\n", line.c_str());
  std::fflush(table_);
}

void ReportSink::progress(double fraction) {
  if (!o_.progress) return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  const std::string cycle = o_.cycles == 1  ? ""
                            : o_.cycles > 1 ? fmt::format("cycle {}/{} ", cycle_ + 1, o_.cycles)
                                            : fmt::format("cycle {} ", cycle_ + 1);
  std::fprintf(stderr, "\r%s[%s%s] %3d%%", cycle.c_str(), std::string(filled, '#').c_str(),
               std::string(kWidth - filled, ' ').c_str(), static_cast<int>(fraction * 100));
  std::fflush(stderr);
  bar_shown_ = true;
}

void ReportSink::cycle_started(int cycle, bool soak) {
  cycle_ = cycle;
  if (soak) partial_.rows.clear();
}

void ReportSink::clear_progress() {
  if (!bar_shown_) return;
  std::fprintf(stderr, "\r%*s\r", 56, "");
  std::fflush(stderr);
  bar_shown_ = false;
}

void ReportSink::finish(const reports::RunResult& result) {
  clear_progress();
  if (result.capacity) {
    std::fputs(("#\n" + reports::format_capacity_lines(result.rows, *result.capacity)).c_str(),
               table_);
    std::fflush(table_);
  }
  if (o_.json_path.empty()) return;
  reports::RunResult r = result;
  r.meta.flags = o_.flags;
  write_json(r);
}

void ReportSink::write_json(const reports::RunResult& r) const {
  reports::write_file_atomic(o_.json_path, reports::to_results_document(r, o_.nccl).dump(2) + "\n");
}

}  // namespace collie::perf
