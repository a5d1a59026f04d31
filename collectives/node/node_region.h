// One rank's piece of the node's shared memory, for collectives among the ranks of one host (node engine).
// Each rank owns a memfd holding a control block and two data slots; every other rank of the communicator
// maps it through /proc/<pid>/fd/<fd>. The owner writes its stage counter, its operation descriptors and
// its slots; peers only read them, except the wake word, which a peer bumps to wake the owner from a futex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace megascale::node {

constexpr uint64_t kRegionMagic = 0x3145444f4e43534dULL;  // "MSCNODE1"

/// What a peer needs to map a region: published in the store, or handed over in a split's all-gather.
struct RegionIdentity {
  int32_t pid = 0;
  int32_t fd = -1;
  uint64_t token = 0;  // random; proves the fd (pids and fds are reused) is the region that was announced
  uint64_t bytes = 0;

  std::string toString() const;
  static bool parse(const std::string& text, RegionIdentity* out);
};

/// What a rank is doing in operation `seq`; peers check it before they touch the rank's data.
struct OpDescriptor {
  uint32_t tag;      // hash of the collective, count, type, op and sequence (see collectiveTag)
  uint32_t unused;
  uint64_t bytes;    // this round's payload
  uint64_t in_addr;  // the owner's user buffers, for cross-memory attach (process_vm_readv)
  uint64_t out_addr;
};

struct alignas(64) RegionHeader {
  // Constant after creation.
  uint64_t magic;
  uint64_t token;
  uint64_t slot_bytes;
  uint64_t self_address;  // where this header lies in the owner's address space (cross-memory attach probe)
  int32_t pid;
  int32_t rank;  // informational (a split learns it after peers may have mapped the region)
  // Written by the owner. stage = 4 * seq + k (k: 1 posted, 2 reduced, 3 done); the descriptor of an
  // operation is written before its stage is released, and stays valid until every peer has moved past it.
  alignas(64) std::atomic<uint64_t> stage;
  OpDescriptor descriptor[2];  // by seq parity
  alignas(64) std::atomic<uint64_t> ready;   // 0 until the owner has mapped every peer; then 1, or 2 if it can CMA
  std::atomic<uint64_t> failed;              // nonzero once the owner's communicator broke
  // Rank 0's only (combining all-reduce, node_allreduce.cc): every rank adds 1 per operation; the rank that
  // brings it to n * seq reduces all slots into result[seq & 1] and releases result_seq = seq.
  alignas(64) std::atomic<uint64_t> arrivals;
  alignas(64) std::atomic<uint64_t> result_seq;
  uint64_t result_mismatch;  // seq of an operation whose ranks disagreed, set before result_seq
  // Written by peers: bumping wake_word (then FUTEX_WAKE) wakes the owner while `sleeping` is set.
  alignas(64) std::atomic<uint32_t> wake_word;
  std::atomic<uint32_t> sleeping;
};

constexpr size_t kHeaderBytes = 4096;
constexpr size_t kResultBytes = 16 << 10;  // each of rank 0's two combining results
static_assert(sizeof(RegionHeader) <= kHeaderBytes);

/// A mapped region: this rank's own (created), or a peer's (attached).
class Region {
 public:
  /// Creates this rank's region with two slots of slot_bytes (rounded up to pages) each. The rank may be set
  /// later, before peers attach (a split learns it after the exchange). Throws Error(kSystem) naming the call.
  static std::unique_ptr<Region> create(int rank, size_t slot_bytes);
  /// Maps peer's region. Fails with a message when the process is gone, the fd is not the announced region,
  /// or /proc/<pid>/fd cannot be opened (other user, other pid namespace).
  static Status attach(const RegionIdentity& identity, int peer, std::unique_ptr<Region>* out);

  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  RegionHeader* header() const { return header_; }
  uint8_t* slot(uint64_t seq) const { return base_ + kSlotsOffset + (seq & 1) * header_->slot_bytes; }
  uint8_t* result(uint64_t seq) const { return base_ + kHeaderBytes + (seq & 1) * kResultBytes; }
  size_t slotBytes() const { return header_->slot_bytes; }
  const RegionIdentity& identity() const { return identity_; }
  /// True once the owning process has exited (pidfd readable); peers only.
  bool ownerExited() const;
  /// Copies bytes from the owner's address space (its user buffer at remote) to local memory.
  Status readOwnerMemory(void* local, uint64_t remote, size_t bytes) const;
  /// Copies bytes from local memory into the owner's address space.
  Status writeOwnerMemory(const void* local, uint64_t remote, size_t bytes) const;

 private:
  static constexpr size_t kSlotsOffset = kHeaderBytes + 2 * kResultBytes;
  Region() = default;
  uint8_t* base_ = nullptr;
  size_t mapped_ = 0;
  RegionHeader* header_ = nullptr;
  RegionIdentity identity_;
  int fd_ = -1;     // own region: the memfd, kept open so peers can reach it through /proc
  int pidfd_ = -1;  // peer region: the owner's pidfd
  int rank_ = -1;   // the owner's rank in the communicator
};

}  // namespace megascale::node
