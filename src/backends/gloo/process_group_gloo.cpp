#include "backends/gloo/process_group_gloo.h"

#include <fmt/format.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <map>

#include "backends/gloo/gloo_collectives.h"
#include "backends/gloo/gloo_connect.h"
#include "backends/gloo/gloo_device.h"
#include "backends/gloo/gloo_p2p.h"
#include "core/error.h"
#include "core/log.h"
#include "discovery/network_choices.h"
#include "store/prefix_store.h"

namespace collie {
namespace {

// One TCP device (and so one event-loop thread) per interface choice, shared by the groups of
// this process.
std::shared_ptr<gloo::transport::Device> shared_device(const GlooDeviceChoice& choice, int rank) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<gloo::transport::Device>> devices;
  const std::string key = choice.address;
  std::lock_guard<std::mutex> lk(mu);
  if (auto d = devices[key].lock()) return d;
  auto d = create_gloo_device(choice, rank);
  devices[key] = d;
  return d;
}

std::string group_label(const GroupInfo& i) { return fmt::format("group {} '{}'", i.name, i.desc); }

}  // namespace

const Capabilities& ProcessGroupGloo::declared_capabilities() {
  // Every op the table runs, every dtype and reduce op (collie's host kernel reduces), on CPU.
  static const Capabilities caps = capabilities_from(
      "gloo", gloo_ops(),
      OpCapability{
          .cpu = true, .cuda = false, .dtypes = kAllDTypeBits, .reduce_ops = kAllReduceOpBits});
  return caps;
}

ProcessGroupGloo::ProcessGroupGloo(GroupInfo info, const Env& env)
    : ProcessGroup(std::move(info)), waiters_(std::make_unique<P2PWaiterPool>()) {
  const GroupInfo& i = this->info();
  if (!i.store) {
    throw InvalidArgument(fmt::format("[Rank {}] gloo: {} has no store to rendezvous through",
                                      i.rank, group_label(i)));
  }
  const GlooDeviceChoice choice = choose_gloo_device(env, i.store_host);
  auto device = shared_device(choice, i.rank);
  if (i.name == "0") {
    record_network_choice({"gloo",
                           choice.address + (choice.iface.empty() ? "" : " (" + choice.iface + ")"),
                           choice.reason});
    log(LogLevel::Info, "gloo: binding {}{} ({})", choice.address,
        choice.iface.empty() ? "" : " on " + choice.iface, choice.reason);
  }
  auto ctx = connect_full_mesh_bounded(i, device, choice.address, choice.reason);
  context_ = std::move(ctx);
  buffers_ = std::make_unique<UnboundBufferPool>(context_);
  log(LogLevel::Debug, "gloo: {} connected, {} ranks, device {} ({})", group_label(i), i.size,
      device->str(), choice.reason);
  // No wake: shutdown() sets stopping_ and notifies before it stops the worker.
  worker_.start("collie-gloo-ops", [this] { worker_loop(); });
}

ProcessGroupGloo::~ProcessGroupGloo() { shutdown(); }

const Capabilities& ProcessGroupGloo::capabilities() const { return declared_capabilities(); }

void ProcessGroupGloo::shutdown() {
  std::deque<Job> orphans;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return;  // the first caller does the work; shutdown is idempotent
    stopping_ = true;
    orphans.swap(queue_);
  }
  cv_.notify_all();
  for (auto& j : orphans) {
    j.work->complete(std::make_exception_ptr(BackendError(
        fmt::format("[Rank {}] gloo {} #{} ({}): the group was shut down before the op ran", rank(),
                    op_name(j.call.type), j.call.seq, group_label(info())))));
  }
  worker_.stop();
  waiters_->stop();
  // Closing the sockets now (not at destruction) lets peers still waiting on this rank fail
  // with NetworkError at once instead of running into their timeout.
  if (context_) context_->closeConnections();
}

GlooErrorContext ProcessGroupGloo::error_context(const OpCall& c) const {
  return GlooErrorContext{
      rank(), c.type, c.seq, is_p2p(c.type) ? c.peer : -1, group_label(info()), c.timeout};
}

void ProcessGroupGloo::fail(const OpCall& c, Work& work, std::exception_ptr error) {
  std::exception_ptr translated = translate_gloo_error(error_context(c), error);
  try {
    std::rethrow_exception(translated);
  } catch (const InvalidArgument&) {
    // Caller mistakes leave the connections intact.
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lk(mu_);
    if (broken_.empty()) broken_ = e.what();
  }
  work.complete(translated);
}

void ProcessGroupGloo::check_usable(const OpCall& c) const {
  if (stopping_) {
    throw BackendError(fmt::format("[Rank {}] gloo {} #{} ({}): the group was shut down", rank(),
                                   op_name(c.type), c.seq, group_label(info())));
  }
  if (!broken_.empty()) {
    throw BackendError(fmt::format(
        "[Rank {}] gloo {} #{} ({}): the group is unusable after an earlier failure ({}); "
        "destroy it and create a new one",
        rank(), op_name(c.type), c.seq, group_label(info()), broken_));
  }
}

std::shared_ptr<Work> ProcessGroupGloo::run(const OpCall& call) {
  auto work = std::make_shared<Work>(call.type, call.seq, call.timeout);
  {
    std::unique_lock<std::mutex> lk(mu_);
    if (call.async_op && !is_p2p(call.type) && broken_.empty() && !stopping_) {
      queue_.push_back(Job{call, work});
      lk.unlock();
      cv_.notify_all();
      return work;
    }
    // Inline collectives run after the queued async ones, so every rank sees one order.
    if (!is_p2p(call.type)) cv_.wait(lk, [&] { return (queue_.empty() && !busy_) || stopping_; });
    try {
      check_usable(call);
    } catch (...) {
      lk.unlock();
      work->complete(std::current_exception());
      return work;
    }
  }
  if (is_p2p(call.type)) {
    run_p2p(call, work);
    return work;
  }
  try {
    execute(call);
    work->complete();
  } catch (...) {
    fail(call, *work, std::current_exception());
  }
  return work;
}

void ProcessGroupGloo::worker_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    std::exception_ptr refused;
    if (!broken_.empty()) {
      try {
        check_usable(job.call);
      } catch (...) {
        refused = std::current_exception();
      }
    }
    lk.unlock();
    if (refused) {
      job.work->complete(refused);
    } else {
      try {
        execute(job.call);
        job.work->complete();
      } catch (...) {
        fail(job.call, *job.work, std::current_exception());
      }
    }
    lk.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

void ProcessGroupGloo::execute(const OpCall& call) {
  // Ops on one context never overlap (see run), so the seq alone keeps slots apart.
  GlooOpArgs a{context_, call, static_cast<uint32_t>(call.seq), scratch_, prepared_};
  try {
    run_op(gloo_ops(), call.type, a);
  } catch (...) {
    // libgloo may still have receives posted into the prepared buffers: never reuse them.
    prepared_.clear();
    throw;
  }
}

void ProcessGroupGloo::run_p2p(const OpCall& call, const std::shared_ptr<Work>& work) {
  // Through the op table like every op: gloo_send/gloo_recv call back into post_p2p.
  struct Poster final : GlooP2PPoster {
    ProcessGroupGloo& g;
    const OpCall& c;
    const std::shared_ptr<Work>& w;
    Poster(ProcessGroupGloo& g_, const OpCall& c_, const std::shared_ptr<Work>& w_)
        : g(g_), c(c_), w(w_) {}
    void post() override { g.post_p2p(c, w); }
  } poster(*this, call, work);
  GlooOpArgs a{context_, call, static_cast<uint32_t>(call.seq), scratch_, prepared_, &poster};
  run_op(gloo_ops(), call.type, a);
}

void ProcessGroupGloo::post_p2p(const OpCall& call, const std::shared_ptr<Work>& work) {
  auto op = std::make_shared<PendingP2P>();
  op->is_send = call.type == OpType::Send;
  op->timeout = call.timeout;
  try {
    op->buffer = buffers_->acquire(call.input.data, call.input.nbytes());
    op->pool = buffers_.get();
    if (op->is_send) {
      op->buffer->send(call.peer, p2p_slot(call.tag));
    } else {
      op->buffer->recv(call.peer, p2p_slot(call.tag));
    }
  } catch (...) {
    fail(call, *work, std::current_exception());
    return;
  }
  // The waiter owns the op; the Work is the caller's. Capture only what outlives the group.
  std::weak_ptr<Work> weak = work;
  const OpCall copy = call;
  op->done = [this, weak, copy](std::exception_ptr error, bool aborted) {
    auto w = weak.lock();
    if (!w) return;
    if (aborted) {
      w->complete(std::make_exception_ptr(BackendError(fmt::format(
          "[Rank {}] gloo {} #{} with peer {} ({}): the group was shut down before it completed",
          rank(), op_name(copy.type), copy.seq, copy.peer, group_label(info())))));
    } else if (error) {
      fail(copy, *w, error);
    } else {
      w->complete();
    }
  };
  waiters_->wait_for(std::move(op));
}

}  // namespace collie
