#include "core/worker_thread.h"

#include <stdexcept>

#include "core/thread_name.h"

namespace collie {

void WorkerThread::start(std::string name, std::function<void()> body, std::function<void()> wake) {
  std::lock_guard<std::mutex> lk(stop_mu_);
  if (thread_.joinable()) throw std::logic_error("WorkerThread::start: '" + name + "' is running");
  wake_ = std::move(wake);
  thread_ = std::thread([name = std::move(name), body = std::move(body)] {
    name_this_thread(name.c_str());
    body();
  });
}

void WorkerThread::stop() {
  std::lock_guard<std::mutex> lk(stop_mu_);
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    throw std::logic_error("WorkerThread::stop called from the worker thread itself");
  }
  if (wake_) wake_();
  thread_.join();
  wake_ = nullptr;
}

void WorkerThread::forget_forked_copy() {
  if (thread_.joinable()) thread_.detach();
  wake_ = nullptr;
}

}  // namespace collie
