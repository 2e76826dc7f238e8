// The worker pool behind parallel_for: one job at a time, split into chunks.
#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tensorjit/config.h"

namespace tj::rt {
namespace {

class Pool {
public:
  explicit Pool(int n) {
    for (int i = 1; i < n; ++i)
      workers_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_)
      w.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(i) for i in [0, ntasks) on the workers and the caller.
  void run(int64_t ntasks, const std::function<void(int64_t)>& task) {
    std::lock_guard job_lock(job_mu_); // one job at a time
    {
      std::lock_guard lock(mu_);
      task_ = &task;
      ntasks_ = ntasks;
      next_.store(0);
      pending_ = ntasks;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    work();
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

private:
  void work() {
    for (;;) {
      int64_t i = next_.fetch_add(1);
      if (i >= ntasks_) return;
      try {
        (*task_)(i);
      } catch (...) {
        std::lock_guard lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
      std::lock_guard lock(mu_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || (generation_ != seen && task_); });
        if (stop_) return;
        seen = generation_;
      }
      work();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex job_mu_, mu_;
  std::condition_variable cv_, done_;
  const std::function<void(int64_t)>* task_ = nullptr;
  std::atomic<int64_t> next_{0};
  int64_t ntasks_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

Pool& pool() {
  static Pool p(num_threads());
  return p;
}

} // namespace

int num_threads() {
  int n = config().num_threads;
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return n;
}

void parallel_for(int64_t n, int64_t grain, int64_t align,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int threads = num_threads();
  if (threads <= 1 || n < 2 * grain) {
    fn(0, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, n / grain);
  int64_t per = (n + chunks - 1) / chunks;
  per = (per + align - 1) / align * align;
  chunks = (n + per - 1) / per;
  pool().run(chunks, [&](int64_t c) { fn(c * per, std::min(n, (c + 1) * per)); });
}

} // namespace tj::rt
