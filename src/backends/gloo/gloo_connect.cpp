#include "backends/gloo/gloo_connect.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "backends/gloo/gloo_errors.h"
#include "backends/gloo/gloo_store.h"
#include "comm/rendezvous.h"
#include "core/error.h"
#include "core/thread_name.h"
#include "store/prefix_store.h"

namespace collie {
namespace {

// Records the key libgloo last waited for or read: it names the peer being connected.
class TracingAdapter : public GlooStoreAdapter {
 public:
  using GlooStoreAdapter::GlooStoreAdapter;
  void wait(const std::vector<std::string>& keys) override {
    note(keys);
    GlooStoreAdapter::wait(keys);
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    note(keys);
    GlooStoreAdapter::wait(keys, t);
  }
  std::vector<char> get(const std::string& key) override {
    note({key});
    return GlooStoreAdapter::get(key);
  }
  int peer() const { return peer_.load(); }

 private:
  void note(const std::vector<std::string>& keys) {
    if (keys.empty()) return;
    // libgloo's keys start with the publishing rank ("3" or "3/1").
    int r = 0;
    bool digits = false;
    for (char c : keys.front()) {
      if (c < '0' || c > '9') break;
      r = r * 10 + (c - '0');
      digits = true;
    }
    if (digits) peer_.store(r);
  }
  std::atomic<int> peer_{-1};
};

struct State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};

std::string label(const GroupInfo& i) { return fmt::format("group {} '{}'", i.name, i.desc); }

}  // namespace

std::shared_ptr<gloo::rendezvous::Context> connect_full_mesh_bounded(
    const GroupInfo& i, const std::shared_ptr<gloo::transport::Device>& device,
    const std::string& address, const std::string& reason) {
  i.store->set(fmt::format("gloo_connect/{}", i.rank), to_bytes(address));
  auto ctx = std::make_shared<gloo::rendezvous::Context>(i.rank, i.size);
  ctx->setTimeout(i.timeout);
  // The helper thread gets its own store connection: a wait parked there must not hold up the
  // caller's look at who arrived.
  auto adapter =
      std::make_shared<TracingAdapter>(std::make_shared<PrefixStore>("gloo", i.store->clone()));
  auto st = std::make_shared<State>();
  std::thread([st, ctx, adapter, dev = std::shared_ptr<gloo::transport::Device>(device)]() mutable {
    name_this_thread("collie-connect");
    std::exception_ptr err;
    try {
      ctx->connectFullMesh(*adapter, dev);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lk(st->mu);
    st->error = err;
    st->done = true;
    st->cv.notify_all();
  }).detach();

  std::unique_lock<std::mutex> lk(st->mu);
  if (st->cv.wait_for(lk, i.timeout, [&] { return st->done; })) {
    if (!st->error) return ctx;
    try {
      std::rethrow_exception(st->error);
    } catch (const Error&) {
      throw;  // the store's own errors already name the missing keys
    } catch (const std::exception& e) {
      const std::string msg = fmt::format(
          "[Rank {}] gloo: connecting {} ({} ranks) over {} ({}) failed: {}; check that every "
          "rank started and that this address is reachable from the others (set "
          "GLOO_SOCKET_IFNAME or COLLIE_GLOO_HOST)",
          i.rank, label(i), i.size, address, reason, e.what());
      if (looks_like_gloo_timeout(e.what())) throw TimeoutError(msg);
      throw NetworkError(msg);
    }
  }
  lk.unlock();
  // Deadline: who never got as far as publishing an address, and what the others published.
  std::vector<int> missing;
  std::string tried;
  try {
    for (int r = 0; r < i.size; ++r) {
      const std::string key = fmt::format("gloo_connect/{}", r);
      if (!i.store->check({key})) {
        missing.push_back(r);
      } else if (r != i.rank) {
        tried += fmt::format("{}{}={}", tried.empty() ? "" : ", ", r, to_string(i.store->get(key)));
      }
    }
  } catch (const Error&) {
    // the store host gave up first; its own error names the missing ranks
  }
  const int peer = adapter->peer();
  std::string what;
  if (!missing.empty()) {
    what = fmt::format("rank{} {} never connected", missing.size() == 1 ? "" : "s",
                       format_ranks(missing));
  } else if (peer >= 0) {
    what = fmt::format(
        "every rank published an address, but the connection to rank {} did not "
        "complete",
        peer);
  } else {
    what = "the connections did not complete";
  }
  throw TimeoutError(fmt::format(
      "[Rank {}] gloo: connecting {} ({} ranks) did not finish within {} ms: {}; this rank bound "
      "{} ({}); addresses published: {}",
      i.rank, label(i), i.size, i.timeout.count(), what, address, reason,
      tried.empty() ? "none" : tried));
}

}  // namespace collie
