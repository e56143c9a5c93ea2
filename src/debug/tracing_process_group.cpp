#include "debug/tracing_process_group.h"

#include <fmt/format.h>

#include <mutex>
#include <vector>

#include "comm/registry.h"
#include "core/atomic_max.h"
#include "core/error.h"
#include "debug/dump_service.h"
#include "debug/watchdog.h"

namespace collie {
namespace {

std::shared_ptr<GroupTrace> make_trace(const ProcessGroup& pg) {
  auto t = std::make_shared<GroupTrace>();
  const GroupInfo& i = pg.info();
  t->pg_id = i.name;
  t->desc = i.desc;
  t->backend = i.backend;
  t->rank = i.rank;
  t->global_ranks = i.global_ranks;
  t->global_rank =
      i.rank < static_cast<int>(i.global_ranks.size()) ? i.global_ranks[i.rank] : i.rank;
  t->store = i.store;
  return t;
}

// The state of groups destroyed while ops were in flight: their Works point into it, so it
// stays for the process's life (never destroyed, so a Work completing at exit finds it too).
void keep_for_in_flight_ops(std::shared_ptr<void> state) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::shared_ptr<void>>();
  std::lock_guard<std::mutex> lk(mu);
  kept->push_back(std::move(state));
}

std::string describe(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

TracingProcessGroup::TracingProcessGroup(std::shared_ptr<ProcessGroup> inner,
                                         FlightRecorder* recorder, Watchdog* watchdog,
                                         std::vector<std::shared_ptr<OpObserver>> observers)
    : ProcessGroupWrapper(std::move(inner)), shared_(std::make_shared<Shared>()) {
  shared_->fr = recorder ? recorder : &FlightRecorder::global();
  shared_->watchdog = watchdog ? watchdog : &Watchdog::global();
  shared_->observers = std::move(observers);
  shared_->trace = make_trace(*this);
  for (Pending& p : shared_->pending) p.shared = shared_.get();
  shared_->fr->add_group(shared_->trace);
}

// No op is submitted while the group is destroyed (ProcessGroup's contract); a slot seen free
// here was released by a completer that is done with the state (busy is its last write).
TracingProcessGroup::~TracingProcessGroup() {
  for (const Pending& p : shared_->pending) {
    if (p.busy.load(std::memory_order_acquire)) {
      keep_for_in_flight_ops(std::move(shared_));
      return;
    }
  }
}

void TracingProcessGroup::before(const OpCall& call) {
  GroupTrace& t = *shared_->trace;
  current_ = InFlight{};
  current_.created_ns = shared_->fr->clock().mono_ns();
  // The enqueued and started seqs are written only by the submitting thread (a group takes
  // submits from one thread at a time, ProcessGroup's contract; current_ relies on it too): no
  // locked instruction. The completed seqs may be raised by several completing threads: OwnedMax.
  if (is_p2p(call.type)) {
    raise_single_writer(t.last_enqueued_p2p, call.seq);
  } else {
    raise_single_writer(t.last_enqueued_collective, call.seq);
  }
  current_.record = shared_->fr->record(t, ++op_id_, call, current_.created_ns);
  // The recorder's reading serves the watchdog too when both keep the same clock.
  std::optional<Clock::TimePoint> now;
  if (&shared_->watchdog->clock() == &shared_->fr->clock())
    now = Clock::TimePoint(std::chrono::nanoseconds(current_.created_ns));
  current_.token = shared_->watchdog->watch(shared_->trace, call.type, call.seq,
                                            call.timeout + watchdog_grace(call.timeout), now);
  if (!shared_->observers.empty()) {
    OpEvent e{&t,
              &call,
              call.type,
              call.seq,
              call.input.nbytes(),
              call.input.dtype,
              current_.created_ns,
              0,
              false,
              nullptr,
              call.in_metrics};
    for (const auto& o : shared_->observers) o->on_op_scheduled(e);
  }
}

std::shared_ptr<Work> TracingProcessGroup::after(const OpCall& call, std::shared_ptr<Work> work) {
  GroupTrace& t = *shared_->trace;
  if (!is_p2p(call.type)) raise_single_writer(t.last_started_collective, call.seq);
  const Done d{current_,         call.type,      call.seq, call.input.nbytes(),
               call.input.dtype, call.in_metrics};
  if (work->is_completed()) {
    // An inline op (the backend ran it to the end): completion marks it started too, and there
    // is no Work to hand the watchdog nor a callback to keep (nor a reference to count).
    d.finish(*shared_, work->exception());
    return work;
  }
  shared_->fr->mark_started(current_.record);
  shared_->watchdog->attach(current_.token, work);
  if (Pending* p = claim_pending()) {
    p->done = d;
    work->set_completion_hook(&complete_pending, p, nullptr);  // no reference: see the header
  } else {
    // More ops in flight than slots: this one's state gets an allocation of its own, which the
    // Work holds (with the group's state) until it completes.
    struct Allocated {
      Pending slot;
      std::shared_ptr<Shared> keep;
    };
    auto own = std::make_shared<Allocated>();
    own->slot.shared = shared_.get();
    own->slot.done = d;
    own->keep = shared_;
    Pending* slot = &own->slot;
    work->set_completion_hook(&complete_allocated, slot, std::move(own));
  }
  return work;
}

TracingProcessGroup::Pending* TracingProcessGroup::claim_pending() {
  for (size_t i = 0; i < kPendingSlots; ++i) {
    const size_t at = (next_pending_ + i) % kPendingSlots;
    Pending& p = shared_->pending[at];
    if (!p.busy.load(std::memory_order_acquire)) {
      p.busy.store(true, std::memory_order_relaxed);
      next_pending_ = (at + 1) % kPendingSlots;
      return &p;
    }
  }
  return nullptr;
}

void TracingProcessGroup::complete_pending(Work& w, void* pending) {
  auto* p = static_cast<Pending*>(pending);
  // The state is alive while the slot is taken (the group's destructor keeps it then); the slot
  // is let go last.
  p->done.finish(*p->shared, w.exception());
  p->busy.store(false, std::memory_order_release);
}

void TracingProcessGroup::complete_allocated(Work& w, void* pending) {
  auto* p = static_cast<Pending*>(pending);
  p->done.finish(*p->shared, w.exception());
}

void TracingProcessGroup::failed(const OpCall& call, std::exception_ptr error) {
  Done{current_, call.type, call.seq, call.input.nbytes(), call.input.dtype, call.in_metrics}
      .finish(*shared_, error);
}

void TracingProcessGroup::Done::finish(Shared& shared, std::exception_ptr error) const {
  GroupTrace& t = *shared.trace;
  const bool failed = error != nullptr;
  if (is_p2p(op)) {
    t.last_completed_p2p.raise(t.completing.mine(), seq);
  } else if (!failed) {
    t.last_completed_collective.raise(t.completing.mine(), seq);
  }
  const int64_t done_ns = shared.fr->clock().mono_ns();  // one read for the record and observers
  shared.fr->mark_completed(f.record, failed, done_ns);
  shared.watchdog->unwatch(f.token);
  if (!shared.observers.empty()) {
    OpEvent e{&t, nullptr, op, seq, bytes, dtype, f.created_ns, done_ns, failed, error, in_metrics};
    for (const auto& o : shared.observers) o->on_op_completed(e);
  }
  if (failed) {
    DumpService::global().request_dump(
        fmt::format("{} #{} in group {} failed", op_name(op), seq, t.pg_id), /*all_ranks=*/true,
        describe(error));
  }
}

}  // namespace collie
