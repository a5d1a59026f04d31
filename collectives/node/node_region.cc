#include "collectives/node/node_region.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <new>

#include "common/crypto.h"

namespace megascale::node {

std::string RegionIdentity::toString() const {
  char text[96];
  std::snprintf(text, sizeof(text), "%d,%d,%016" PRIx64 ",%" PRIu64, pid, fd, token, bytes);
  return text;
}

bool RegionIdentity::parse(const std::string& text, RegionIdentity* out) {
  RegionIdentity id;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%d,%d,%16" SCNx64 ",%" SCNu64 "%n", &id.pid, &id.fd, &id.token, &id.bytes,
                  &consumed) != 4 ||
      static_cast<size_t>(consumed) != text.size() || id.pid <= 0 || id.fd < 0 || id.bytes < kHeaderBytes) {
    return false;
  }
  *out = id;
  return true;
}

std::unique_ptr<Region> Region::create(int rank, size_t slot_bytes) {
  slot_bytes = (slot_bytes + 4095) / 4096 * 4096;
  size_t bytes = kSlotsOffset + 2 * slot_bytes;
  int fd = memfd_create("megascale-node", MFD_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::kSystem, "node region: memfd_create failed: " + errnoText(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    throw Error(ErrorCode::kSystem, "node region: ftruncate to " + std::to_string(bytes) + " bytes failed: " +
                                        errnoText(err));
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    close(fd);
    throw Error(ErrorCode::kSystem, "node region: mmap of " + std::to_string(bytes) + " bytes failed: " +
                                        errnoText(err));
  }
  std::unique_ptr<Region> r(new Region());
  r->base_ = static_cast<uint8_t*>(base);
  r->mapped_ = bytes;
  r->fd_ = fd;
  r->header_ = new (base) RegionHeader{};
  RegionHeader* h = r->header_;
  randomBytes(&h->token, sizeof(h->token));
  h->magic = kRegionMagic;
  h->slot_bytes = slot_bytes;
  h->self_address = reinterpret_cast<uint64_t>(h);
  h->pid = static_cast<int32_t>(getpid());
  h->rank = rank;
  h->stage.store(3, std::memory_order_release);  // operation 0 is done: every slot is free
  r->identity_ = RegionIdentity{h->pid, fd, h->token, bytes};
  return r;
}

Status Region::attach(const RegionIdentity& id, int peer, std::unique_ptr<Region>* out) {
  std::string who = "rank " + std::to_string(peer) + " (pid " + std::to_string(id.pid) + ")";
  std::string path = "/proc/" + std::to_string(id.pid) + "/fd/" + std::to_string(id.fd);
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, id.pid, 0));
  if (pidfd < 0) return Status(ErrorCode::kPeerLost, who + " is not running: pidfd_open: " + errnoText(errno));
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    // A dying process closes its files before its pidfd turns readable: give it a moment to finish exiting,
    // so a peer killed before we attached reads as a lost peer, not as a permission problem.
    pollfd exited{pidfd, POLLIN, 0};
    const bool gone = err == ENOENT && poll(&exited, 1, 1000) == 1;
    close(pidfd);
    if (gone) return Status(ErrorCode::kPeerLost, who + " exited before this rank could attach its shared memory");
    return Status(ErrorCode::kSystem, "cannot open " + who + "'s shared memory " + path + ": " + errnoText(err) +
                                          " (ranks in other pid namespaces or of other users cannot share memory; "
                                          "MEGASCALE_SHM_COLLECTIVES=0 turns the node engine off)");
  }
  struct stat st {};
  void* base = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == id.bytes) {
    base = mmap(nullptr, id.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);  // the mapping keeps the memory
  if (base == MAP_FAILED) {
    close(pidfd);
    return Status(ErrorCode::kPeerLost, who + ": " + path + " is not the announced shared memory (size " +
                                            std::to_string(st.st_size) + ", expected " + std::to_string(id.bytes) + ")");
  }
  std::unique_ptr<Region> r(new Region());
  r->base_ = static_cast<uint8_t*>(base);
  r->mapped_ = id.bytes;
  r->header_ = static_cast<RegionHeader*>(base);
  r->identity_ = id;
  r->pidfd_ = pidfd;
  r->rank_ = peer;
  const RegionHeader* h = r->header_;
  if (h->magic != kRegionMagic || h->token != id.token || h->pid != id.pid ||
      kSlotsOffset + 2 * h->slot_bytes != id.bytes) {
    return Status(ErrorCode::kPeerLost, who + ": " + path + " is not the announced shared memory (magic or token)");
  }
  *out = std::move(r);
  return Status::ok();
}

Region::~Region() {
  if (base_ != nullptr) munmap(base_, mapped_);
  if (fd_ >= 0) close(fd_);
  if (pidfd_ >= 0) close(pidfd_);
}

bool Region::ownerExited() const {
  if (pidfd_ < 0) return false;
  pollfd p{pidfd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

namespace {

// process_vm_readv / process_vm_writev until every byte moved (they may stop short).
Status crossMemoryCopy(bool read, int pid, int rank, uint8_t* local, uint64_t remote, size_t bytes) {
  while (bytes > 0) {
    iovec l{local, bytes};
    iovec r{reinterpret_cast<void*>(remote), bytes};
    ssize_t n = read ? process_vm_readv(pid, &l, 1, &r, 1, 0) : process_vm_writev(pid, &l, 1, &r, 1, 0);
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      return Status(err == ESRCH ? ErrorCode::kPeerLost : ErrorCode::kSystem,
                    std::string(read ? "process_vm_readv of " : "process_vm_writev of ") + std::to_string(bytes) +
                        (read ? " bytes from rank " : " bytes to rank ") + std::to_string(rank) + " (pid " +
                        std::to_string(pid) + ") failed: " + errnoText(err));
    }
    local += n;
    remote += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace

Status Region::readOwnerMemory(void* local, uint64_t remote, size_t bytes) const {
  return crossMemoryCopy(true, identity_.pid, rank_, static_cast<uint8_t*>(local), remote, bytes);
}

Status Region::writeOwnerMemory(const void* local, uint64_t remote, size_t bytes) const {
  return crossMemoryCopy(false, identity_.pid, rank_, const_cast<uint8_t*>(static_cast<const uint8_t*>(local)), remote,
                         bytes);
}

}  // namespace megascale::node
