// One object per process, shared by everyone who holds it and made again once all have let go, or in a forked
// child (which must not use its parent's: an RDMA device context or a UCX worker does not survive fork).
#pragma once

#include <unistd.h>

#include <memory>
#include <mutex>

namespace megascale {

template <typename T>
class ProcessShared {
 public:
  /// The live object, or a new one from `make` (a callable returning std::shared_ptr<T>; it may throw).
  template <typename Make>
  std::shared_ptr<T> get(Make&& make) {
    std::lock_guard<std::mutex> guard(lock_);
    std::shared_ptr<T> object = current_.lock();
    if (object == nullptr || owner_ != getpid()) {
      object = make();
      current_ = object;
      owner_ = getpid();
    }
    return object;
  }

 private:
  std::mutex lock_;
  std::weak_ptr<T> current_;
  pid_t owner_ = 0;
};

}  // namespace megascale
