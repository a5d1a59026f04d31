// A background thread that lives as long as its owner: the owner starts it with its loop, and the owner's end
// stops it (`stopping` set under `mutex`, `wake` notified) and joins it. The loop waits on `wake` with `mutex`
// held and returns once `stopping` is set. Declared as the owner's last member, it is destroyed first, while
// everything its loop uses still exists.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace megascale::launcher {

class WorkerThread {
 public:
  WorkerThread() = default;
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;
  ~WorkerThread() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void start(std::function<void()> loop) { thread_ = std::thread(std::move(loop)); }

  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;  // under mutex

 private:
  std::thread thread_;
};

}  // namespace megascale::launcher
