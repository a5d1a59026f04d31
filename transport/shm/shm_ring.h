// A single-producer single-consumer byte ring in shared memory. The producer owns `head`, the consumer owns
// `tail`; each publishes with release and reads the other's with acquire, so no lock and no syscall is
// needed to move bytes. `acks` counts large messages the consumer has pulled by cross-memory attach, and
// `cma_ok` is the consumer's verdict on whether it can read the producer's memory directly.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace megascale::transport::shm {

struct alignas(64) RingHeader {
  alignas(64) std::atomic<uint64_t> head;
  alignas(64) std::atomic<uint64_t> tail;
  alignas(64) std::atomic<uint64_t> acks;
  std::atomic<uint32_t> cma_ok;
  uint32_t magic;
  uint64_t capacity;  // power of two
};

constexpr uint32_t kRingMagic = 0x4d534852;  // "MSHR"

/// One record per message; large ones carry the sender's address instead of the payload.
struct Record {
  uint32_t tag;
  uint32_t kind;  // kInline: payload follows in the ring; kRemote: read `address` in the sender's memory
  uint64_t size;
  uint64_t address;
};
constexpr uint32_t kInline = 0;
constexpr uint32_t kRemote = 1;

/// View of a mapped ring: header followed by capacity bytes of data.
class Ring {
 public:
  Ring() = default;
  Ring(void* base) : header_(static_cast<RingHeader*>(base)), data_(static_cast<uint8_t*>(base) + sizeof(RingHeader)) {}
  static size_t mappingSize(uint64_t capacity) { return sizeof(RingHeader) + capacity; }

  RingHeader* header() const { return header_; }

  /// Producer: copies up to size bytes in; returns how many fitted.
  size_t write(const uint8_t* src, size_t size) {
    if (size == 0) return 0;  // src may be null for an empty message
    uint64_t head = header_->head.load(std::memory_order_relaxed);
    uint64_t tail = header_->tail.load(std::memory_order_acquire);
    size_t n = std::min<uint64_t>(size, header_->capacity - (head - tail));
    copyIn(head, src, n);
    header_->head.store(head + n, std::memory_order_release);
    return n;
  }
  /// Producer: space free now.
  uint64_t freeSpace() const {
    return header_->capacity - (header_->head.load(std::memory_order_relaxed) - header_->tail.load(std::memory_order_acquire));
  }

  /// Consumer: bytes available now.
  uint64_t available() const {
    return header_->head.load(std::memory_order_acquire) - header_->tail.load(std::memory_order_relaxed);
  }
  /// Consumer: copies up to size bytes out; returns how many.
  size_t read(uint8_t* dst, size_t size) {
    if (size == 0) return 0;
    uint64_t tail = header_->tail.load(std::memory_order_relaxed);
    size_t n = std::min<uint64_t>(size, header_->head.load(std::memory_order_acquire) - tail);
    copyOut(tail, dst, n);
    header_->tail.store(tail + n, std::memory_order_release);
    return n;
  }

 private:
  void copyIn(uint64_t pos, const uint8_t* src, size_t n) {
    size_t at = pos & (header_->capacity - 1), first = std::min<size_t>(n, header_->capacity - at);
    std::memcpy(data_ + at, src, first);
    std::memcpy(data_, src + first, n - first);
  }
  void copyOut(uint64_t pos, uint8_t* dst, size_t n) const {
    size_t at = pos & (header_->capacity - 1), first = std::min<size_t>(n, header_->capacity - at);
    std::memcpy(dst, data_ + at, first);
    std::memcpy(dst + first, data_, n - first);
  }

  RingHeader* header_ = nullptr;
  uint8_t* data_ = nullptr;
};

}  // namespace megascale::transport::shm
