#pragma once
// Append-only row writers: CSV (header line, one line per row) and JSONL (one JSON object per
// row, same fields as the JSON rows). Every row is flushed as soon as it is written, so an
// interrupted run keeps the rows that finished. Not thread-safe; one writer per file.
#include <cstdio>
#include <string>

#include "reports/result.h"

namespace collie::reports {

class RowWriter {
 public:
  virtual ~RowWriter();
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;
  // Appends and flushes. Throws collie::Error when the write fails.
  virtual void write(const ResultRow& row) = 0;

 protected:
  // Opens `path` for writing (truncates). Throws collie::Error naming the path.
  explicit RowWriter(const std::string& path);
  void put(const std::string& line);
  std::FILE* f_ = nullptr;
  std::string path_;
};

class CsvWriter : public RowWriter {
 public:
  explicit CsvWriter(const std::string& path);
  void write(const ResultRow& row) override;
  static const char* header();
  // One row's line, '\n' included.
  static std::string row(const ResultRow& row);
};

class JsonlWriter : public RowWriter {
 public:
  explicit JsonlWriter(const std::string& path);
  void write(const ResultRow& row) override;
};

}  // namespace collie::reports
