#include "collectives/memory/fake_device.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "collectives/reduce_kernels.h"
#include "common/status.h"

namespace megascale::memory {

namespace {

constexpr size_t kAlignment = 256;  // as cudaMalloc's

size_t alignUp(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// The engine: one thread per queue runs the queued items in a random order (the executor queues only items whose
// inputs are final, so any order is right, and a caller that assumed the order would be caught), and a test()
// sees an item done only once the thread has run it.
class FakeQueue : public EngineQueue {
 public:
  explicit FakeQueue(FakeDeviceSpace& space) : space_(space), thread_([this](std::stop_token stop) { loop(stop); }) {}
  // Items still queued are dropped; the one running finishes first (the thread joins).
  ~FakeQueue() override {
    thread_.request_stop();
    cv_.notify_all();
  }

  Status copy(void* dst, const void* src, size_t bytes, uint64_t* ticket) override {
    return queue(Item{Item::kCopy, dst, src, nullptr, bytes, mscUint8, mscSum, 0}, ticket);
  }
  Status reduce(mscDataType_t type, mscRedOp_t op, void* dst, const void* a, const void* b, size_t count,
                uint64_t* ticket) override {
    return queue(Item{Item::kReduce, dst, a, b, count, type, op, 0}, ticket);
  }
  Status divide(mscDataType_t type, void* buf, size_t count, int divisor, uint64_t* ticket) override {
    return queue(Item{Item::kDivide, buf, nullptr, nullptr, count, type, mscSum, divisor}, ticket);
  }
  Status test(uint64_t ticket, bool* done) override {
    std::lock_guard lock(mutex_);
    *done = finished_.count(ticket) != 0;
    if (*done) finished_.erase(ticket);
    return Status::ok();
  }
  Status drain(std::chrono::milliseconds limit) override {
    std::unique_lock lock(mutex_);
    if (idle_cv_.wait_for(lock, limit, [&] { return pending_.empty() && !running_; })) return Status::ok();
    return Status(ErrorCode::kTimeout, "fake-device: " + std::to_string(pending_.size() + (running_ ? 1 : 0)) +
                                           " queued item(s) not finished after " + std::to_string(limit.count()) + " ms");
  }

 private:
  struct Item {
    enum Kind : uint8_t { kCopy, kReduce, kDivide } kind;
    void* dst;
    const void* a;
    const void* b;
    size_t n;  // bytes for a copy, elements otherwise
    mscDataType_t type;
    mscRedOp_t op;
    int divisor;
    uint64_t ticket = 0;
  };

  Status queue(Item item, uint64_t* ticket) {
    {
      std::lock_guard lock(mutex_);
      item.ticket = *ticket = ++last_ticket_;
      pending_.push_back(item);
    }
    cv_.notify_one();
    return Status::ok();
  }

  void run(const Item& item) const {
    uint8_t* dst = space_.reach(item.dst);
    switch (item.kind) {
      case Item::kCopy:
        std::memmove(dst, space_.reach(item.a), item.n);
        break;
      case Item::kReduce:
        reduceElements(item.type, item.op, dst, space_.reach(item.a), space_.reach(item.b), item.n);
        break;
      case Item::kDivide:
        finishAverage(item.type, dst, item.n, item.divisor);
        break;
    }
    space_.countItem();
  }

  void loop(std::stop_token stop) {
    std::minstd_rand pick(static_cast<unsigned>(reinterpret_cast<uintptr_t>(this)));
    std::unique_lock lock(mutex_);
    while (true) {
      // A stalled engine (a hung kernel, for tests) looks again every millisecond.
      while (!cv_.wait_for(lock, stop, std::chrono::milliseconds(1), [&] { return !pending_.empty() && !space_.stalled(); })) {
        if (stop.stop_requested()) return;
      }
      if (stop.stop_requested()) return;
      const size_t at = pick() % pending_.size();
      const Item item = pending_[at];
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(at));
      running_ = true;
      lock.unlock();
      run(item);
      lock.lock();
      running_ = false;
      finished_.insert(item.ticket);
      if (pending_.empty()) idle_cv_.notify_all();
    }
  }

  FakeDeviceSpace& space_;
  std::mutex mutex_;
  std::condition_variable_any cv_;
  std::condition_variable_any idle_cv_;
  std::deque<Item> pending_;
  std::set<uint64_t> finished_;
  bool running_ = false;
  uint64_t last_ticket_ = 0;
  std::jthread thread_;  // last: it starts once the rest is built
};

}  // namespace

FakeDeviceSpace::FakeDeviceSpace(size_t capacity) : capacity_(alignUp(capacity)) {
  fd_ = memfd_create("megascale-fake-device", MFD_CLOEXEC);
  if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(capacity_)) != 0) {
    throw Error(ErrorCode::kSystem, std::string("fake device: memfd of ") + std::to_string(capacity_) +
                                        " bytes: " + std::strerror(errno));
  }
  void* view = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  void* device = mmap(nullptr, capacity_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (view == MAP_FAILED || device == MAP_FAILED) {
    throw Error(ErrorCode::kSystem, std::string("fake device: mmap: ") + std::strerror(errno));
  }
  view_ = static_cast<uint8_t*>(view);
  device_ = static_cast<uint8_t*>(device);
  free_[0] = capacity_;
}

FakeDeviceSpace::~FakeDeviceSpace() {
  unregisterSpace(this);
  munmap(view_, capacity_);
  munmap(device_, capacity_);
  close(fd_);
}

bool FakeDeviceSpace::contains(const void* data) const {
  const auto* p = static_cast<const uint8_t*>(data);
  return p >= device_ && p < device_ + capacity_;
}

uint8_t* FakeDeviceSpace::reach(const void* data) const {
  if (!contains(data)) return static_cast<uint8_t*>(const_cast<void*>(data));
  return view_ + (static_cast<const uint8_t*>(data) - device_);
}

// First fit over the free ranges, merged again on release: allocations here are few and large (buffers, scratch).
void* FakeDeviceSpace::allocate(size_t bytes) {
  const size_t size = alignUp(bytes == 0 ? 1 : bytes);
  std::lock_guard lock(mutex_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const size_t offset = it->first, left = it->second - size;
    free_.erase(it);
    if (left > 0) free_[offset + size] = left;
    used_[offset] = size;
    return device_ + offset;
  }
  return nullptr;
}

void FakeDeviceSpace::release(void* data) {
  if (data == nullptr || !contains(data)) return;
  std::lock_guard lock(mutex_);
  auto used = used_.find(static_cast<size_t>(static_cast<uint8_t*>(data) - device_));
  if (used == used_.end()) return;
  size_t offset = used->first, size = used->second;
  used_.erase(used);
  // Give the pages back, so that a freed buffer reads as zeros (as fresh device memory need not, but nothing may
  // rely on old bytes) and the memfd does not keep them.
  (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset), static_cast<off_t>(size));
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + size) {
    size += next->second;
    free_.erase(next);
  }
  auto prev = free_.lower_bound(offset);
  if (prev != free_.begin()) {
    --prev;
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  free_[offset] = size;
}

void* FakeDeviceSpace::allocateStaging(size_t bytes) { return std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096); }

void FakeDeviceSpace::releaseStaging(void* data) { std::free(data); }

Status FakeDeviceSpace::openQueue(std::unique_ptr<EngineQueue>* queue) {
  *queue = std::make_unique<FakeQueue>(*this);
  return Status::ok();
}

uint64_t FakeDeviceSpace::itemsRun() const {
  std::lock_guard lock(mutex_);
  return items_run_;
}

void FakeDeviceSpace::countItem() {
  std::lock_guard lock(mutex_);
  ++items_run_;
}

FakeDeviceSpace& fakeDevice() {
  static FakeDeviceSpace* space = [] {
    auto* s = new FakeDeviceSpace(size_t{1} << 30);  // never destroyed: buffers may outlive static destructors
    registerSpace(s);
    return s;
  }();
  return *space;
}

}  // namespace megascale::memory
