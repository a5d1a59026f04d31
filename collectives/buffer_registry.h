// Memory registered with a communicator's transports, as NCCL's ncclCommRegister: a transport that must register
// what it moves (ibverbs: ibv_reg_mr, pinning the pages) then finds the kept registration that holds a transfer's
// buffer, instead of registering and deregistering that buffer for each message. The communicator's cached scratch
// is registered the same way for as long as it is kept, so a training loop over registered buffers makes no
// registration in its steady state. Transports that need none (tcp, shm, udp, ucx) only note the range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "common/status.h"
#include "transport/transport.h"

namespace megascale {

class BufferRegistry {
 public:
  BufferRegistry(int rank, std::vector<std::shared_ptr<transport::Transport>> transports);
  ~BufferRegistry();  // deregisters what is still registered
  BufferRegistry(const BufferRegistry&) = delete;
  BufferRegistry& operator=(const BufferRegistry&) = delete;

  /// Registers [data, data + size) with every transport that takes its kind of memory (host, or device where a
  /// transport moves device memory itself); *handle names the registration. Any thread. kInvalidArgument for a
  /// null buffer or an empty range; a transport's refusal undoes the others and names the transport.
  Status add(void* data, size_t size, void** handle);
  /// Undoes add(); no transfer of the range may be in flight. kInvalidArgument for a handle add() did not give
  /// (or gave and was already removed).
  Status remove(void* handle);
  /// Registrations alive now.
  size_t size() const;
  /// Registrations the communicator's transports have made with their devices so far (kept ones and those
  /// transfers from unregistered memory made for themselves): what a steady state adds nothing to.
  uint64_t registrationsMade() const;

 private:
  struct Entry {
    void* data;
    size_t size;
    std::vector<std::pair<transport::Transport*, transport::MemoryRegion>> regions;
  };
  void deregister(Entry& entry);

  const int rank_;
  const std::vector<std::shared_ptr<transport::Transport>> transports_;
  mutable std::mutex mutex_;
  std::map<void*, std::unique_ptr<Entry>> entries_;  // by handle: the entry's address
};

/// A block kept registered while it lives (the communicator's scratch): registration failures are logged and
/// leave the block unregistered (its transfers then register for themselves), never fail an operation.
class RegisteredBlock {
 public:
  RegisteredBlock() = default;
  ~RegisteredBlock() { reset(); }
  RegisteredBlock(const RegisteredBlock&) = delete;
  RegisteredBlock& operator=(const RegisteredBlock&) = delete;
  void reset(BufferRegistry* registry = nullptr, void* data = nullptr, size_t size = 0);

 private:
  BufferRegistry* registry_ = nullptr;
  void* handle_ = nullptr;
};

}  // namespace megascale
