// A folder of dumps (load_dump_dir, fold_dump_dir in analyzer.h): collie's collie_fr_rank_*.json
// and PyTorch's pickles, listed once and read in ascending rank order. fold_dump_dir parses on
// worker threads (collie-analyze) a bounded window ahead of the caller's thread, which folds each
// dump and drops it, so a folder of 16,384 dumps is never held whole; each worker asks the kernel
// to read the file a round ahead of the one it takes (core/regular_file.h).
#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <variant>

#include "core/error.h"
#include "core/regular_file.h"
#include "core/thread_name.h"
#include "debug/analyzer.h"
#include "debug/pickle.h"
#include "debug/torch_dump.h"

namespace collie {
namespace {

namespace fs = std::filesystem;

// A file's first byte, or -1 when it cannot be read or is not a regular file (a FIFO planted
// under a dump's name is never opened for reading in a way that blocks).
int first_byte(const fs::path& p) {
  try {
    RegularFile f(p.string(), kMaxPickleBytes);
    const int c = f.stream().get();
    return c == std::char_traits<char>::eof() ? -1 : c;
  } catch (const InvalidArgument&) {
    return -1;
  }
}

struct DumpFile {
  fs::path path;
  int rank;  // from the name: a pickle's is its rank, a JSON dump's only orders the reading
  bool torch;
};

// The dumps of `dir`: collie's JSON ones by the rank in their names, then the pickles (PyTorch's
// layout, whatever their prefix; the rank ends the name) of ranks without a JSON dump by name
// (COLLIE_FR_DUMP_FORMAT=json,torch writes both for a rank: collie's own says more).
std::vector<DumpFile> list_dumps(const std::string& dir, std::vector<std::string>& errors) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InvalidArgument(fmt::format("'{}' is not a directory (pass COLLIE_FR_DUMP_DIR)", dir));
  }
  std::vector<DumpFile> collie_files, torch_files;
  std::set<int> named;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("collie_fr_rank_", 0) == 0 && e.path().extension() == ".json") {
      const auto rank = torch_dump_rank(e.path().stem().string());
      collie_files.push_back({e.path(), rank.value_or(kMaxAnalyzeWorld), false});
      if (rank) named.insert(*rank);
    } else if (name[0] != '.' && e.is_regular_file(ec) && first_byte(e.path()) == 0x80) {
      const auto rank = torch_dump_rank(name);
      if (rank) {
        torch_files.push_back({e.path(), *rank, true});
      } else {
        errors.push_back(
            fmt::format("{}: a pickle whose name does not end in its rank", e.path().string()));
      }
    }
  }
  auto by_rank = [](const DumpFile& a, const DumpFile& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.path < b.path;
  };
  std::sort(collie_files.begin(), collie_files.end(), by_rank);
  std::sort(torch_files.begin(), torch_files.end(), by_rank);
  for (DumpFile& f : torch_files) {
    if (named.count(f.rank) == 0) collie_files.push_back(std::move(f));
  }
  return collie_files;
}

RankDump parse_file(const DumpFile& f) {
  if (!f.torch) return parse_dump_file(f.path.string());
  RegularFile file(f.path.string(), kMaxPickleBytes);
  return parse_torch_dump(file.read_all(), f.rank);
}

using Parsed = std::variant<RankDump, std::string>;  // the dump, or why it was not read

Parsed parse_or_error(const DumpFile& f) {
  try {
    return parse_file(f);
  } catch (const std::exception& e) {
    return fmt::format("{}: {}", f.path.string(), e.what());
  }
}

// Which file gave each rank its dump: a second file for a rank is an error, except a pickle of a
// rank whose JSON dump was read (its name did not say so).
class Keeper {
 public:
  // Whether to keep `d`; when not, why (or "" to skip it silently).
  std::optional<std::string> refuse(const RankDump& d, const DumpFile& f) {
    auto [it, fresh] = first_.emplace(d.rank, &f);
    if (fresh) return std::nullopt;
    if (f.torch && !it->second->torch) return "";
    return fmt::format("{}: rank {} already has a dump ({})", f.path.string(), d.rank,
                       it->second->path.string());
  }

 private:
  std::map<int, const DumpFile*> first_;
};

}  // namespace

std::vector<RankDump> load_dump_dir(const std::string& dir, std::vector<std::string>& errors) {
  const std::vector<DumpFile> files = list_dumps(dir, errors);
  std::vector<RankDump> out;
  Keeper keeper;
  for (const DumpFile& f : files) {
    Parsed p = parse_or_error(f);
    if (auto* why = std::get_if<std::string>(&p)) {
      errors.push_back(std::move(*why));
      continue;
    }
    RankDump& d = std::get<RankDump>(p);
    if (auto why = keeper.refuse(d, f)) {
      if (!why->empty()) errors.push_back(std::move(*why));
      continue;
    }
    out.push_back(std::move(d));
  }
  return out;
}

void fold_dump_dir(const std::string& dir, DumpFold& fold, std::vector<std::string>& errors,
                   int threads) {
  const std::vector<DumpFile> files = list_dumps(dir, errors);
  if (threads <= 0)
    threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  threads = std::min<int>(threads, static_cast<int>(std::max<size_t>(files.size(), 1)));
  // Parsed dumps wait here for their turn; workers stay within `window` files of the folding.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    size_t next = 0, folded = 0;
    bool stop = false;
    std::vector<std::optional<Parsed>> done;
  } sh;
  sh.done.resize(files.size());
  const size_t window = 4 * static_cast<size_t>(threads);
  // A folder larger than the page cache: each file's pages are let go once it is parsed, so
  // that reading the next ones does not wait for the kernel to reclaim room first.
  uint64_t bytes = 0;
  for (const DumpFile& f : files) {
    std::error_code ec;
    const uintmax_t n = fs::file_size(f.path, ec);
    if (!ec) bytes += n;
  }
  const bool release = exceeds_page_cache(bytes);
  auto work = [&] {
    name_this_thread("collie-analyze");
    while (true) {
      size_t i;
      {
        std::unique_lock<std::mutex> lk(sh.mu);
        sh.cv.wait(
            lk, [&] { return sh.stop || sh.next >= files.size() || sh.next < sh.folded + window; });
        if (sh.stop || sh.next >= files.size()) return;
        i = sh.next++;
      }
      // The disk reads the files a round of the workers ahead while this one is parsed: a
      // folder larger than the page cache (16,384 dumps: 25 GB) otherwise waits on the disk.
      if (i + threads < files.size()) prefetch_regular_file(files[i + threads].path.string());
      Parsed p = parse_or_error(files[i]);
      if (release) release_regular_file(files[i].path.string());
      std::lock_guard<std::mutex> lk(sh.mu);
      sh.done[i] = std::move(p);
      sh.cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  // Stops and joins the workers however this returns (an exception from fold.add included).
  struct Join {
    Shared& sh;
    std::vector<std::thread>& pool;
    ~Join() {
      {
        std::lock_guard<std::mutex> lk(sh.mu);
        sh.stop = true;
      }
      sh.cv.notify_all();
      for (std::thread& t : pool) t.join();
    }
  } join{sh, pool};
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  Keeper keeper;
  for (size_t i = 0; i < files.size(); ++i) {
    Parsed p;
    {
      std::unique_lock<std::mutex> lk(sh.mu);
      sh.cv.wait(lk, [&] { return sh.done[i].has_value(); });
      p = std::move(*sh.done[i]);
      sh.done[i].reset();
      sh.folded = i + 1;
    }
    sh.cv.notify_all();
    if (auto* why = std::get_if<std::string>(&p)) {
      errors.push_back(std::move(*why));
      continue;
    }
    const RankDump& d = std::get<RankDump>(p);
    if (auto why = keeper.refuse(d, files[i])) {
      if (!why->empty()) errors.push_back(std::move(*why));
      continue;
    }
    fold.add(d);
  }
}

}  // namespace collie
