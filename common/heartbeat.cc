#include "common/heartbeat.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/log.h"
#include "common/status.h"

namespace megascale::heartbeat {

std::string unpackName(uint64_t packed) {
  std::string text;
  for (; packed != 0; packed >>= 8) text += static_cast<char>(packed & 0xff);
  return text;
}

namespace {

// MEGASCALE_HEARTBEAT=fd:index, set by the executor; the table is the fd's whole size.
Slot* mapFromEnvironment() {
  const char* value = std::getenv("MEGASCALE_HEARTBEAT");
  if (value == nullptr || *value == '\0') return nullptr;
  int fd = -1, index = -1;
  struct stat st {};
  if (std::sscanf(value, "%d:%d", &fd, &index) != 2 || fd < 0 || index < 0 || fstat(fd, &st) != 0 ||
      static_cast<size_t>(st.st_size) < (static_cast<size_t>(index) + 1) * kSlotBytes) {
    MSC_LOG_WARN("MEGASCALE_HEARTBEAT=%s names no heartbeat table this process inherited; not reporting", value);
    return nullptr;
  }
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    MSC_LOG_WARN("MEGASCALE_HEARTBEAT: cannot map the heartbeat table: %s; not reporting", errnoText(errno).c_str());
    return nullptr;
  }
  close(fd);  // the mapping keeps the memory; the rank's own children need not inherit it
  auto* slot = reinterpret_cast<Slot*>(static_cast<char*>(map) + static_cast<size_t>(index) * kSlotBytes);
  slot->pid.store(static_cast<uint64_t>(getpid()), std::memory_order_relaxed);
  return slot;
}

}  // namespace

Slot* mySlot() {
  static Slot* const slot = mapFromEnvironment();
  static const pid_t owner = getpid();
  return slot != nullptr && owner == getpid() ? slot : nullptr;
}

void reportStep(int64_t step, std::string_view phase) {
  Slot* s = mySlot();
  if (s == nullptr) return;
  s->step.store(step, std::memory_order_relaxed);
  s->phase.store(packName(phase), std::memory_order_relaxed);
  s->beats.fetch_add(1, std::memory_order_release);
}

void reportIssued(uint64_t packed_group, uint32_t seq, uint32_t collective_kind) {
  Slot* s = mySlot();
  if (s == nullptr) return;
  s->op_group.store(packed_group, std::memory_order_relaxed);
  s->op_seq.store(seq, std::memory_order_relaxed);
  s->op_kind.store(collective_kind + 1, std::memory_order_relaxed);
  s->ops_issued.fetch_add(1, std::memory_order_release);
}

void reportFinished(Outcome outcome) {
  Slot* s = mySlot();
  if (s == nullptr) return;
  if (outcome == Outcome::kTransportError) s->transport_errors.fetch_add(1, std::memory_order_relaxed);
  if (outcome == Outcome::kOtherError) s->other_errors.fetch_add(1, std::memory_order_relaxed);
  s->ops_completed.fetch_add(1, std::memory_order_release);
}

Table::Table(int count) : count_(count) {
  fd_ = memfd_create("megascale-heartbeats", 0);  // inherited by the ranks: no MFD_CLOEXEC
  if (fd_ < 0) throw Error(ErrorCode::kSystem, "heartbeat table: memfd_create failed: " + errnoText(errno));
  const size_t bytes = static_cast<size_t>(count) * kSlotBytes;
  void* map = MAP_FAILED;
  if (ftruncate(fd_, static_cast<off_t>(bytes)) == 0) {
    map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  }
  if (map == MAP_FAILED) {
    const int err = errno;
    close(fd_);
    throw Error(ErrorCode::kSystem,
                "heartbeat table: cannot size or map " + std::to_string(bytes) + " bytes: " + errnoText(err));
  }
  base_ = static_cast<char*>(map);
}

Table::~Table() {
  munmap(base_, static_cast<size_t>(count_) * kSlotBytes);
  close(fd_);
}

std::string Table::environmentValue(int index) const { return std::to_string(fd_) + ":" + std::to_string(index); }

void Table::clear() { std::memset(base_, 0, static_cast<size_t>(count_) * kSlotBytes); }

}  // namespace megascale::heartbeat
