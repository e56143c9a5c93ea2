#include "store/file_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "store/tcp_store_protocol.h"

namespace collie {

using store_wire::Reader;
using store_wire::Writer;

namespace {

// Log records: u8 kind | fields as in the TcpStore wire format (store/tcp_store_protocol.h).
enum class Record : uint8_t { kSet = 1, kDelete = 2, kWorkerDone = 3 };

std::string sys_error(std::string_view what, const std::string& path) {
  return fmt::format(
      "FileStore {}: {} failed: {} (is the directory writable and shared by all "
      "ranks?)",
      path, what, std::strerror(errno));
}

}  // namespace

// Holds the file open and flock'ed for one operation.
class FileStore::Locked {
 public:
  Locked(const std::string& path, int lock_op) : path_(path) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw StoreError(sys_error("open", path));
    while (flock(fd_, lock_op) != 0) {
      if (errno != EINTR) {
        const std::string msg = sys_error("flock", path);
        close(fd_);
        throw StoreError(msg);
      }
    }
  }
  ~Locked() { close(fd_); }  // closing the descriptor releases the flock
  int fd() const { return fd_; }
  void append(const Bytes& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = pwrite(fd_, data.data() + off, data.size() - off, end_ + off);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw StoreError(sys_error("write", path_));
      }
      off += static_cast<size_t>(n);
    }
    end_ += static_cast<off_t>(data.size());
  }
  void set_end(off_t end) { end_ = end; }

 private:
  const std::string& path_;
  int fd_ = -1;
  off_t end_ = 0;
};

FileStore::FileStore(std::string path, int num_workers, Millis timeout)
    : Store(timeout), path_(std::move(path)), num_workers_(num_workers) {
  std::lock_guard<std::mutex> g(mu_);
  Locked lk(path_, LOCK_EX);
  sync(lk);
}

FileStore::~FileStore() {
  if (num_workers_ <= 0) return;
  try {
    std::lock_guard<std::mutex> g(mu_);
    Locked lk(path_, LOCK_EX);
    sync(lk);
    Writer w;
    w.u8(static_cast<uint8_t>(Record::kWorkerDone));
    write_record(lk, w);
    if (++workers_done_ >= num_workers_) unlink(path_.c_str());
  } catch (const Error&) {
    // A destructor cannot report; the file is left behind for the next run to overwrite.
  }
}

void FileStore::sync(Locked& lk) {
  struct stat st {};
  if (fstat(lk.fd(), &st) != 0) throw StoreError(sys_error("stat", path_));
  if (st.st_size < pos_) {  // the file was removed and recreated: start over
    cache_ = std::make_unique<HashStore>();
    pos_ = 0;
    workers_done_ = 0;
  }
  if (st.st_size > pos_) {
    Bytes buf(static_cast<size_t>(st.st_size - pos_));
    size_t got = 0;
    while (got < buf.size()) {
      const ssize_t n = pread(lk.fd(), buf.data() + got, buf.size() - got, pos_ + got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw StoreError(sys_error("read", path_));
      got += static_cast<size_t>(n);
    }
    size_t off = 0;
    while (off + store_wire::kHeaderBytes <= buf.size()) {
      const uint32_t len = store_wire::decode_u32(buf.data() + off);
      // A record cut short (a writer died mid-write) ends the log.
      if (buf.size() - off - store_wire::kHeaderBytes < len) break;
      Reader r(buf.data() + off + store_wire::kHeaderBytes, len);
      switch (static_cast<Record>(r.u8())) {
        case Record::kSet: {
          std::string key = r.str();
          cache_->set(key, r.bytes());
          break;
        }
        case Record::kDelete:
          cache_->delete_key(r.str());
          break;
        case Record::kWorkerDone:
          ++workers_done_;
          break;
      }
      off += store_wire::kHeaderBytes + len;
    }
    pos_ += static_cast<off_t>(off);
  }
  lk.set_end(pos_);
}

void FileStore::write_record(Locked& lk, Writer& w) {
  const Bytes& frame = w.finish();
  lk.append(frame);
  pos_ += static_cast<off_t>(frame.size());
}

void FileStore::write_set(Locked& lk, const std::string& key) {
  Writer w;
  w.u8(static_cast<uint8_t>(Record::kSet)).str(key).bytes(cache_->get(key));
  write_record(lk, w);
}

void FileStore::check_live(const std::vector<std::string>& keys) const {
  if (interrupted_.load()) throw_store_interrupted(keys, fmt::format("FileStore {}", path_));
}

void FileStore::interrupt() {
  {
    std::lock_guard<std::mutex> w(wake_mu_);
    interrupted_.store(true);
  }
  wake_.notify_all();
}

std::shared_ptr<Store> FileStore::clone() {
  return std::make_shared<FileStore>(path_, 0, timeout());
}

void FileStore::set(const std::string& key, const Bytes& value) { multi_set({key}, {value}); }

void FileStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  check_live(keys);
  std::lock_guard<std::mutex> g(mu_);
  Locked lk(path_, LOCK_EX);
  sync(lk);
  cache_->multi_set(keys, values);  // validates sizes before anything is written
  for (const auto& k : keys) write_set(lk, k);
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  check_live({key});
  std::lock_guard<std::mutex> g(mu_);
  Locked lk(path_, LOCK_EX);
  sync(lk);
  const int64_t v = cache_->add(key, delta);
  write_set(lk, key);
  return v;
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  check_live({key});
  std::lock_guard<std::mutex> g(mu_);
  Locked lk(path_, LOCK_EX);
  sync(lk);
  const bool existed = cache_->check({key});
  const Bytes before = existed ? cache_->get(key) : Bytes{};
  Bytes result = cache_->compare_set(key, expected, desired);
  if (cache_->check({key}) && (!existed || cache_->get(key) != before)) write_set(lk, key);
  return result;
}

void FileStore::append(const std::string& key, const Bytes& value) {
  check_live({key});
  std::lock_guard<std::mutex> g(mu_);
  Locked lk(path_, LOCK_EX);
  sync(lk);
  cache_->append(key, value);
  write_set(lk, key);
}

bool FileStore::delete_key(const std::string& key) {
  check_live({key});
  std::lock_guard<std::mutex> g(mu_);
  Locked lk(path_, LOCK_EX);
  sync(lk);
  if (!cache_->delete_key(key)) return false;
  Writer w;
  w.u8(static_cast<uint8_t>(Record::kDelete)).str(key);
  write_record(lk, w);
  return true;
}

int64_t FileStore::num_keys() {
  check_live({});
  std::lock_guard<std::mutex> g(mu_);
  Locked lk(path_, LOCK_SH);
  sync(lk);
  return cache_->num_keys();
}

bool FileStore::check(const std::vector<std::string>& keys) {
  check_live(keys);
  std::lock_guard<std::mutex> g(mu_);
  Locked lk(path_, LOCK_SH);
  sync(lk);
  return cache_->check(keys);
}

std::vector<Bytes> FileStore::wait_for(const std::vector<std::string>& keys, Millis timeout,
                                       bool fetch) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + resolve(timeout);
  auto backoff = std::chrono::milliseconds(1);
  for (;;) {
    check_live(keys);
    {
      std::lock_guard<std::mutex> g(mu_);
      Locked lk(path_, LOCK_SH);
      sync(lk);
      if (cache_->check(keys)) return fetch ? cache_->multi_get(keys) : std::vector<Bytes>{};
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      throw_store_timeout(keys, std::chrono::duration_cast<Millis>(now - start),
                          fmt::format("FileStore {}", path_));
    }
    // Another process's write is invisible until we look; poll with a capped backoff (cut
    // short by interrupt()).
    {
      std::unique_lock<std::mutex> w(wake_mu_);
      wake_.wait_for(w, std::min<std::chrono::nanoseconds>(backoff, deadline - now),
                     [&] { return interrupted_.load(); });
    }
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::milliseconds(50));
  }
}

Bytes FileStore::get(const std::string& key) {
  return std::move(wait_for({key}, kUseGroupTimeout, true).front());
}

void FileStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  wait_for(keys, timeout, false);
}

std::vector<Bytes> FileStore::multi_get(const std::vector<std::string>& keys) {
  return wait_for(keys, kUseGroupTimeout, true);
}

}  // namespace collie
