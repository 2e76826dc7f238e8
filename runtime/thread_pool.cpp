// The worker pool behind parallel_for: one job at a time, split into chunks.
#include "runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/stats_counters.h"
#include "tensorjit/config.h"

namespace tj::rt {

void stores_visible() {
#if defined(__x86_64__)
  __builtin_ia32_sfence();
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

namespace {

// Polls `ready` for up to `us` microseconds; true as soon as it holds. A worker out of work and
// the caller waiting for the workers poll before they sleep (config().spin_us): waking a sleeping
// thread takes tens of microseconds, paid on every launch when launches come back to back (a
// training step, a benchmark loop), since the caller starts its chunk at once and a woken worker
// late.
template <class F> bool spin_until(F&& ready, int us) {
  if (us <= 0) return ready();
  ++counters().pool_polls;
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (int i = 1;; ++i) {
    if (ready()) return true;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return false;
  }
}

class Pool {
public:
  Pool() = default;
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_.store(true);
    }
    cv_.notify_all();
    for (auto& w : workers_)
      w.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(i) for i in [0, ntasks) on the caller and the workers. The pool grows to `threads`
  // (workers are started on first need, and kept); a job wakes as many as it has tasks beside
  // the caller's, though others still polling after an earlier job may take some too.
  void run(int64_t ntasks, int threads, const std::function<void(int64_t)>& task) {
    std::lock_guard job_lock(job_mu_); // one job at a time
    while (size() < threads)
      workers_.emplace_back([this] { loop(); });
    {
      std::lock_guard lock(mu_);
      task_ = &task;
      ntasks_ = ntasks;
      next_.store(0);
      pending_.store(ntasks);
      error_ = nullptr;
      // Read by the workers: config() is the caller's. Threads that outnumber the cores do not
      // poll: each would take a core from one that has work (64 threads on 2 cores made every
      // launch wait for the polling to time out).
      spin_us_.store(threads <= cores() ? config().spin_us : 0);
      generation_.fetch_add(1);
    }
    // As many workers as there are tasks beside the caller's; polling ones take theirs unwoken.
    const int64_t wake = std::min<int64_t>(ntasks - 1, static_cast<int64_t>(workers_.size()));
    if (wake >= static_cast<int64_t>(workers_.size()))
      cv_.notify_all();
    else
      for (int64_t i = 0; i < wake; ++i)
        cv_.notify_one();
    work();
    // Every task has run; then no worker joins the job, and the caller returns once those in it
    // have left, so that the next job's fields are never read by a worker of this one.
    wait_until([&] { return pending_.load() == 0; });
    {
      std::lock_guard lock(mu_);
      task_ = nullptr;
    }
    wait_until([&] { return busy_.load() == 0; });
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
      stores_visible();
      if (pending_.fetch_sub(1) == 1) notify_done();
    }
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load() != seen || stop_.load(); }, spin_us_.load());
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_.load() || (generation_.load() != seen && task_); });
        if (stop_.load()) return;
        seen = generation_.load();
        busy_.fetch_add(1);
      }
      work();
      if (busy_.fetch_sub(1) == 1) notify_done();
    }
  }

  // The caller polls `ready` for a while, then sleeps until it holds.
  template <class F> void wait_until(F&& ready) {
    if (spin_until(ready, spin_us_.load())) return;
    std::unique_lock lock(mu_);
    done_.wait(lock, ready);
  }
  void notify_done() {
    std::lock_guard lock(mu_); // the caller is either before its check of the condition or asleep
    done_.notify_all();
  }

  std::vector<std::thread> workers_;
  std::mutex job_mu_, mu_;
  std::condition_variable cv_, done_;
  // The job, written under mu_ while no worker is in work().
  const std::function<void(int64_t)>* task_ = nullptr;
  int64_t ntasks_ = 0;
  std::exception_ptr error_;
  std::atomic<int64_t> next_{0}, pending_{0};
  std::atomic<int> busy_{0}; // workers in work()
  // Polled by idle workers.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> spin_us_{0};
};

Pool& pool() {
  static Pool p;
  return p;
}

} // namespace

int cores() {
  // Read once: hardware_concurrency() opens and reads a sysfs file on each call, which cost
  // about 5 us of every materialization.
  static const int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return n;
}

int num_threads() {
  const int n = config().num_threads;
  return n > 0 ? n : cores();
}

void parallel_for(int64_t n, int64_t grain, int64_t align,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int threads = num_threads();
  if (threads <= 1 || n < 2 * grain) {
    ++counters().parallel_chunks;
    fn(0, n);
    stores_visible();
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, n / grain);
  int64_t per = (n + chunks - 1) / chunks;
  per = (per + align - 1) / align * align;
  chunks = (n + per - 1) / per;
  counters().parallel_chunks += chunks;
  pool().run(chunks, threads, [&](int64_t c) { fn(c * per, std::min(n, (c + 1) * per)); });
}

} // namespace tj::rt
