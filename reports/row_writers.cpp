#include "reports/row_writers.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/error.h"
#include "reports/json_io.h"

namespace collie::reports {
namespace {

// The first line of the open file `fd`, without '\n' (at most 4 KiB; "" when empty).
std::string first_line(int fd) {
  std::string out;
  char buf[512];
  for (off_t at = 0; out.size() < 4096;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const char* nl = static_cast<const char*>(std::memchr(buf, '\n', static_cast<size_t>(n)));
    out.append(buf, nl != nullptr ? static_cast<size_t>(nl - buf) : static_cast<size_t>(n));
    if (nl != nullptr) break;
    at += n;
  }
  return out;
}

// Whether a non-empty CSV file `fd` begins with collie's header, so appended rows line up.
bool has_csv_header(int fd) {
  std::string want = CsvWriter::header();
  want.pop_back();  // the '\n'
  return first_line(fd) == want;
}

constexpr const char* kOtherCsv =
    "already holds other data (its first line is not collie perf's CSV header); appending "
    "would mix columns: name a new file";

}  // namespace

void check_row_file(const std::string& path, std::string_view flag, bool csv) {
  auto fail = [&](const std::string& why) {
    throw InvalidArgument(fmt::format("{} '{}': {}", flag, path, why));
  };
  struct stat st {};
  if (path.empty() || ::lstat(path.c_str(), &st) != 0) return;  // missing: created by the run
  if (S_ISLNK(st.st_mode)) fail("is a symlink; collie does not append through one");
  if (!S_ISREG(st.st_mode)) fail("is not a regular file");
  if (!csv || st.st_size == 0) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;  // unreadable: the writer's open reports it
  const bool ok = has_csv_header(fd);
  ::close(fd);
  if (!ok) fail(kOtherCsv);
}

RowWriter::RowWriter(const std::string& path) : path_(path) {
  // O_NONBLOCK: a FIFO planted at the path must not block the open; it is refused below.
  fd_ =
      ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ELOOP) throw Error(path + " is a symlink; collie does not append through one");
    throw Error(fmt::format("cannot open {} for appending ({}; check the directory)", path,
                            std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw Error(path + " is not a regular file");
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

RowWriter::~RowWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void RowWriter::put(const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(fmt::format("writing {} failed ({})", path_,
                              n < 0 ? std::strerror(errno) : "nothing written"));
    off += static_cast<size_t>(n);
  }
}

const char* CsvWriter::header() {
  return "collective,placement,size_bytes,count,dtype,redop,root,time_us,algbw_gbps,busbw_gbps,"
         "wrong,wrong_rank,wrong_offset,slowest_rank,iter_min_us,iter_p50_us,iter_p95_us,"
         "iter_p99_us,iter_max_us,iter_cv,iters,agg_iters,cycle,rank_time_us\n";
}

CsvWriter::CsvWriter(const std::string& path) : RowWriter(path) {
  // Whether the file is new and the header it then gets, decided under an exclusive lock: two
  // runs starting on one new file would otherwise both find it empty and both write a header.
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) throw Error(fmt::format("cannot lock {} ({})", path, std::strerror(errno)));
  }
  struct Unlock {
    int fd;
    ~Unlock() { ::flock(fd, LOCK_UN); }
  } unlock{fd_};
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    throw Error(fmt::format("cannot read {} ({})", path, std::strerror(errno)));
  if (st.st_size == 0) {
    put(header());
    return;
  }
  if (!has_csv_header(fd_)) throw Error(path + " " + kOtherCsv);
}

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
