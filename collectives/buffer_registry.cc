#include "collectives/buffer_registry.h"

#include <string>

#include "collectives/memory/memory_space.h"
#include "common/log.h"

namespace megascale {

BufferRegistry::BufferRegistry(int rank, std::vector<std::shared_ptr<transport::Transport>> transports)
    : rank_(rank), transports_(std::move(transports)) {}

BufferRegistry::~BufferRegistry() {
  for (auto& [handle, entry] : entries_) deregister(*entry);
}

Status BufferRegistry::add(void* data, size_t size, void** handle) {
  const std::string what = "rank " + std::to_string(rank_) + ": registering " + std::to_string(size) + " bytes";
  if (handle == nullptr) return Status(ErrorCode::kInvalidArgument, what + ": null handle pointer");
  *handle = nullptr;
  if (data == nullptr || size == 0) {
    return Status(ErrorCode::kInvalidArgument, what + ": " + (data == nullptr ? "null buffer" : "empty range"));
  }
  memory::MemorySpace* space = nullptr;
  const bool device = !memory::spaceOf(data, &space).isOk() || space != nullptr;
  const transport::PointerKind kind = device ? transport::kDevicePointer : transport::kHostPointer;
  auto entry = std::make_unique<Entry>(Entry{data, size, {}});
  for (const auto& t : transports_) {
    // Device buffers reach a transport that cannot take them through the executor's host staging instead.
    if (!(t->properties().pointer_kinds & kind)) continue;
    transport::MemoryRegion region;
    Status s = t->registerMemory(data, size, kind, &region);
    if (!s.isOk()) {
      deregister(*entry);
      return Status(s.code(), what + " with " + t->properties().name + ": " + s.message());
    }
    entry->regions.emplace_back(t.get(), region);
  }
  std::lock_guard lock(mutex_);
  *handle = entry.get();
  entries_.emplace(entry.get(), std::move(entry));
  return Status::ok();
}

Status BufferRegistry::remove(void* handle) {
  std::unique_ptr<Entry> entry;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(handle);
    if (it == entries_.end()) {
      return Status(ErrorCode::kInvalidArgument,
                    "rank " + std::to_string(rank_) + ": deregistering: not a registration of this communicator");
    }
    entry = std::move(it->second);
    entries_.erase(it);
  }
  deregister(*entry);
  return Status::ok();
}

void BufferRegistry::deregister(Entry& entry) {
  for (auto& [t, region] : entry.regions) t->deregisterMemory(&region);
  entry.regions.clear();
}

size_t BufferRegistry::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

uint64_t BufferRegistry::registrationsMade() const {
  uint64_t made = 0;
  for (const auto& t : transports_) made += t->registrationsMade();
  return made;
}

void RegisteredBlock::reset(BufferRegistry* registry, void* data, size_t size) {
  if (registry_ != nullptr && handle_ != nullptr) (void)registry_->remove(handle_);
  registry_ = registry;
  handle_ = nullptr;
  if (registry_ == nullptr || data == nullptr || size == 0) return;
  Status s = registry_->add(data, size, &handle_);
  if (!s.isOk()) MSC_LOG_WARN("%s: the scratch's transfers register for themselves", s.message().c_str());
}

}  // namespace megascale
