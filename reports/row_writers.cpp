#include "reports/row_writers.h"

#include <fmt/format.h>

#include "core/error.h"
#include "reports/json_io.h"

namespace collie::reports {

RowWriter::RowWriter(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "w");
  if (f_ == nullptr) throw Error("cannot open " + path + " for writing (check the directory)");
}

RowWriter::~RowWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

void RowWriter::put(const std::string& line) {
  if (std::fputs(line.c_str(), f_) < 0 || std::fflush(f_) != 0)
    throw Error("writing " + path_ + " failed (disk full?)");
}

const char* CsvWriter::header() {
  return "collective,placement,size_bytes,count,dtype,redop,root,time_us,algbw_gbps,busbw_gbps,"
         "wrong,wrong_rank,wrong_offset,slowest_rank,iter_min_us,iter_p50_us,iter_p95_us,"
         "iter_p99_us,iter_max_us,iter_cv,iters,agg_iters,cycle,rank_time_us\n";
}

CsvWriter::CsvWriter(const std::string& path) : RowWriter(path) { put(header()); }

void CsvWriter::write(const ResultRow& r) { put(row(r)); }

std::string CsvWriter::row(const ResultRow& r) {
  // Per-rank times go in one field separated by ';' so the column count stays fixed.
  std::string ranks;
  for (size_t i = 0; i < r.rank_time_us.size(); ++i) {
    if (i > 0) ranks.push_back(';');
    ranks.append(fmt::format("{}", r.rank_time_us[i]));
  }
  const std::string wrong = r.wrong >= 0 ? std::to_string(r.wrong) : "";
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                     r.collective, r.placement, r.size_bytes, r.count, r.dtype, r.redop, r.root,
                     r.time_us, r.algbw_gbps, r.busbw_gbps, wrong, r.wrong_rank, r.wrong_offset,
                     r.slowest_rank, r.iter.min_us, r.iter.p50_us, r.iter.p95_us, r.iter.p99_us,
                     r.iter.max_us, r.iter.cv, r.iters, r.agg_iters, r.cycle, ranks);
}

JsonlWriter::JsonlWriter(const std::string& path) : RowWriter(path) {}

void JsonlWriter::write(const ResultRow& r) { put(to_json(r).dump() + "\n"); }

}  // namespace collie::reports
