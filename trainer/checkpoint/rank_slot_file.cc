#include "trainer/checkpoint/rank_slot_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "collectives/kernels/stream_copy.h"

namespace megascale::trainer {

namespace {

constexpr char kMagic[8] = {'M', 'S', 'R', 'A', 'N', 'K', '0', '2'};
constexpr uint32_t kVersion = 2;
constexpr size_t kPage = 4096;
constexpr size_t kCommitAt = 16, kFixedBytes = 92;

size_t headerBytes(size_t shape_bytes) { return (kFixedBytes + shape_bytes + kPage - 1) / kPage * kPage; }
uint64_t padded(uint64_t state_bytes) { return (state_bytes + 7) / 8 * 8; }

std::runtime_error failure(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

template <typename T>
void put(char* at, const T& value) {
  std::memcpy(at, &value, sizeof(T));
}
template <typename T>
T get(const char* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

// The stamps are 8-byte aligned words that a reader in another process may load while they change.
void storeStamp(char* at, uint64_t generation) {
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(reinterpret_cast<uint64_t*>(at), generation, __ATOMIC_RELEASE);
}

// Reads exactly `bytes` at `offset`; false at end of file or on error.
bool readAt(int fd, void* out, size_t bytes, uint64_t offset) {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t n = pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace

RankSlotWriter::RankSlotWriter(std::string path, size_t shape_bytes, uint64_t state_bytes)
    : path_(std::move(path)), header_bytes_(headerBytes(shape_bytes)), state_bytes_(state_bytes) {
  file_bytes_ = header_bytes_ + padded(state_bytes) + 8;
  fd_ = Fd(open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd_.valid()) throw failure("cannot open checkpoint slot", path_);
  struct stat st {};
  if (fstat(fd_.get(), &st) != 0) throw failure("cannot stat checkpoint slot", path_);
  // A slot of another size (another layout, an older format) starts over empty: its stamps must not survive.
  if (static_cast<size_t>(st.st_size) != file_bytes_ &&
      (ftruncate(fd_.get(), 0) != 0 || ftruncate(fd_.get(), static_cast<off_t>(file_bytes_)) != 0)) {
    throw failure("cannot size checkpoint slot", path_);
  }
  if (const int e = posix_fallocate(fd_.get(), 0, static_cast<off_t>(file_bytes_)); e != 0) {
    errno = e;
    throw failure("cannot reserve " + std::to_string(file_bytes_) + " bytes for checkpoint slot", path_);
  }
  void* map = mmap(nullptr, file_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
  if (map == MAP_FAILED) throw failure("cannot map checkpoint slot", path_);
  map_ = static_cast<char*>(map);
}

RankSlotWriter::~RankSlotWriter() {
  if (map_ != nullptr) munmap(map_, file_bytes_);
}

bool RankSlotWriter::fits(size_t shape_bytes, uint64_t state_bytes) const {
  return headerBytes(shape_bytes) == header_bytes_ && state_bytes == state_bytes_;
}

void RankSlotWriter::write(uint64_t generation, const RankSlotHeader& header,
                           const std::vector<std::string_view>& pieces) {
  uint64_t total = 0;
  for (const std::string_view piece : pieces) total += piece.size();
  if (generation == 0 || !fits(header.shape.size(), total)) {
    throw std::logic_error("checkpoint slot " + path_ + " was sized for another state");
  }
  storeStamp(map_ + header_bytes_ + padded(state_bytes_), generation);  // intent: the slot is torn from here
  std::memcpy(map_, kMagic, sizeof(kMagic));
  put(map_ + 8, kVersion);
  put(map_ + 12, static_cast<uint32_t>(header_bytes_));
  put(map_ + 24, state_bytes_);
  put(map_ + 32, header.state.step);
  put(map_ + 40, header.state.data_position);
  put(map_ + 48, header.optimizer_steps);
  std::memcpy(map_ + 56, header.state.rng.data(), sizeof(header.state.rng));
  put(map_ + 88, static_cast<uint32_t>(header.shape.size()));
  std::memcpy(map_ + kFixedBytes, header.shape.data(), header.shape.size());
  char* at = map_ + header_bytes_;
  for (const std::string_view piece : pieces) {
    // The slot is read only after a failure (or by a replicator, through the file): streaming stores skip
    // reading its lines first and leave the training's working set in the cache. They end with a store fence,
    // so the commit stamp below cannot become visible before them.
    kernels::streamCopy(at, piece.data(), piece.size());
    at += piece.size();
  }
  storeStamp(map_ + kCommitAt, generation);  // commit: whole again
  // Stores through a mapping leave the modification time alone; replicators look for changed files by it.
  if (futimens(fd_.get(), nullptr) != 0) throw failure("cannot touch checkpoint slot", path_);
}

RankSlotRead readRankSlot(const std::string& path, std::vector<float>* state) {
  RankSlotRead out;
  const auto problem = [&](const std::string& what) {
    out.problem = "checkpoint slot " + path + ": " + what;
    return out;
  };
  const Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || fstat(fd.get(), &st) != 0) return problem(std::string("cannot open: ") + std::strerror(errno));
  const auto size = static_cast<uint64_t>(st.st_size);
  char fixed[kFixedBytes];
  if (size < kFixedBytes || !readAt(fd.get(), fixed, kFixedBytes, 0)) return problem("truncated header");
  if (std::memcmp(fixed, kMagic, sizeof(kMagic)) != 0) return problem("not a megascale rank checkpoint slot");
  if (get<uint32_t>(fixed + 8) != kVersion) {
    return problem("format version " + std::to_string(get<uint32_t>(fixed + 8)) + ", this build reads " +
                   std::to_string(kVersion));
  }
  const uint64_t commit = get<uint64_t>(fixed + kCommitAt);
  const uint64_t header_bytes = get<uint32_t>(fixed + 12), state_bytes = get<uint64_t>(fixed + 24);
  const uint32_t shape_bytes = get<uint32_t>(fixed + 88);
  // Each bound checked before the next sum, so hostile sizes cannot overflow into a small one.
  if (header_bytes % kPage != 0 || header_bytes == 0 || shape_bytes > header_bytes - kFixedBytes ||
      state_bytes > size || state_bytes % sizeof(float) != 0 || header_bytes + padded(state_bytes) + 8 != size) {
    return problem("truncated or malformed: its header says " + std::to_string(header_bytes) + " + " +
                   std::to_string(state_bytes) + " bytes, the file has " + std::to_string(size));
  }
  out.header.shape.resize(shape_bytes);
  if (!readAt(fd.get(), out.header.shape.data(), shape_bytes, kFixedBytes)) return problem("truncated shape");
  out.header.state_bytes = state_bytes;
  out.header.state.step = get<int64_t>(fixed + 32);
  out.header.state.data_position = get<int64_t>(fixed + 40);
  out.header.optimizer_steps = get<int64_t>(fixed + 48);
  std::memcpy(out.header.state.rng.data(), fixed + 56, sizeof(out.header.state.rng));
  if (state != nullptr) {
    state->resize(state_bytes / sizeof(float));
    if (!readAt(fd.get(), state->data(), state_bytes, header_bytes)) return problem("truncated state");
  }
  uint64_t intent = 0;
  if (!readAt(fd.get(), &intent, sizeof(intent), header_bytes + padded(state_bytes))) return problem("truncated end");
  if (commit == 0 || commit != intent) {
    return problem("torn (its writer stopped in the middle of a checkpoint, or a copy caught one under way)");
  }
  out.intact = true;
  return out;
}

}  // namespace megascale::trainer
