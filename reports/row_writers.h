#pragma once
// Append-only row writers: CSV (header line, one line per row) and JSONL (one JSON object per
// row, same fields as the JSON rows). A file that exists is appended to, never truncated, so
// runs pointed at one file accumulate their rows (a CSV's header is written only into an empty
// file, decided under an exclusive flock(2) so that two runs starting on one new file write one
// header; a CSV whose first line is another header is refused rather than mixed). Every row
// goes to the file in one write(2) on an O_APPEND descriptor as soon as it is written, so an
// interrupted run keeps the rows that finished and rows of runs appending at once do not
// interleave. Safe in a shared folder: a symlink or a non-regular file at the path is refused.
// Not thread-safe; one writer per object.
#include <string>
#include <string_view>

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
  // Opens `path` for appending (created 0666 & ~umask when missing). Throws collie::Error naming
  // the path when it cannot be opened, is a symlink or is not a regular file.
  explicit RowWriter(const std::string& path);
  // Appends `line` in one write. Throws collie::Error when it fails.
  void put(const std::string& line);
  std::string path_;
  int fd_ = -1;  // opened for reading too: CsvWriter reads back an existing file's header
};

class CsvWriter : public RowWriter {
 public:
  explicit CsvWriter(const std::string& path);
  void write(const ResultRow& row) override;
  static const char* header();
  // One row's line, '\n' included.
  static std::string row(const ResultRow& row);
};

// What the writers' constructors refuse, checked before a run starts (collie perf calls it before
// any rank is launched): `path` may be missing or a regular file, not a symlink or anything else;
// with `csv`, a non-empty file must begin with CsvWriter::header(). Throws InvalidArgument, one
// line: "FLAG 'PATH': ...". Thread-safe (reads the file system only).
void check_row_file(const std::string& path, std::string_view flag, bool csv);

class JsonlWriter : public RowWriter {
 public:
  explicit JsonlWriter(const std::string& path);
  void write(const ResultRow& row) override;
};

}  // namespace collie::reports
