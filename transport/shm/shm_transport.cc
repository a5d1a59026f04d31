#include "transport/shm/shm_transport.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "common/auth.h"
#include "common/crypto.h"
#include "common/log.h"
#include "transport/shm/shm_comm.h"

namespace megascale::transport {

namespace {

constexpr char kAddressPrefix[] = "shm:";
// The receiver reads this word from the sender with process_vm_readv to learn whether it may.
volatile uint64_t g_probe_word = 0x4d5343414d50524fULL;  // "MSCAMPRO"

struct ShmHello {
  uint64_t local_id;
  uint64_t probe_address;
};

Hello encode(const ShmHello& h) {
  Hello out{};
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

ShmHello decode(const Hello& in) {
  ShmHello h;
  std::memcpy(&h, in.data(), sizeof(h));
  return h;
}

sockaddr_un abstractAddress(const std::string& name, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  addr.sun_path[0] = '\0';  // abstract namespace: no file to clean up
  std::memcpy(addr.sun_path + 1, name.data(), std::min(name.size(), sizeof(addr.sun_path) - 2));
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

uint64_t roundUpToPowerOfTwo(uint64_t v) {
  uint64_t p = 4096;
  while (p < v) p *= 2;
  return p;
}

class ShmListener : public Listener {
 public:
  explicit ShmListener(const TransportOptions& options) : options_(options) {
    uint8_t random[8];
    randomBytes(random, sizeof(random));
    name_ = "megascale-shm-" + std::to_string(getpid()) + "-" + toHex(random, sizeof(random));
    fd_ = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    socklen_t len;
    sockaddr_un addr = abstractAddress(name_, &len);
    if (!fd_.valid() || ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_.get(), 1024) != 0) {
      throw Error(ErrorCode::kSystem, "shm transport: cannot listen on a Unix socket: " + errnoText(errno));
    }
    address_ = Address::fromString(kAddressPrefix + hostIdentity() + ":" + name_);
  }

  const Address& address() const override { return address_; }

  Status accept(std::unique_ptr<RecvComm>* comm) override {
    while (true) {
      int fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      pending_.push_back(std::make_unique<Pending>(Pending{Fd(fd), AuthSession(AuthSession::Role::kServer, options_.secret),
                                                           false, deadlineAfter(std::chrono::milliseconds(options_.handshake_timeout_ms))}));
    }
    for (size_t i = 0; i < pending_.size();) {
      std::unique_ptr<RecvComm> made;
      Status s = progress(*pending_[i], &made);
      if (!s.isOk() || made || Clock::now() > pending_[i]->deadline) {
        if (!s.isOk() || (!made && Clock::now() > pending_[i]->deadline)) {
          MSC_LOG_WARN("shm transport: refused a connection: %s", s.isOk() ? "handshake timed out" : s.message().c_str());
        }
        if (made && !*comm) *comm = std::move(made);
        else if (made) ready_.push_back(std::move(made));
        pending_.erase(pending_.begin() + static_cast<long>(i));
        continue;
      }
      ++i;
    }
    if (!*comm && !ready_.empty()) {
      *comm = std::move(ready_.back());
      ready_.pop_back();
    }
    return Status::ok();
  }

  bool appendReadiness(std::vector<pollfd>& fds) const override {
    fds.push_back(pollfd{fd_.get(), POLLIN, 0});
    for (const auto& p : pending_) {
      fds.push_back(pollfd{p->fd.get(), p->authenticated ? short(POLLIN) : p->auth.wantedEvents(), 0});
    }
    return true;
  }

 private:
  struct Pending {
    Fd fd;
    AuthSession auth;
    bool authenticated;
    Deadline deadline;
  };

  Status progress(Pending& p, std::unique_ptr<RecvComm>* made) {
    if (!p.authenticated) {
      MSC_RETURN_IF_ERROR(p.auth.progress(p.fd.get(), &p.authenticated));
      if (!p.authenticated) return Status::ok();
    }
    // The sender's ring arrives as a file descriptor (SCM_RIGHTS) after the handshake.
    char byte;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = ::recvmsg(p.fd.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::ok();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (n != 1 || c == nullptr || c->cmsg_type != SCM_RIGHTS) {
      return Status(ErrorCode::kPeerLost, "peer closed or sent no ring descriptor");
    }
    int ring_fd_raw;
    std::memcpy(&ring_fd_raw, CMSG_DATA(c), sizeof(int));
    Fd ring_fd(ring_fd_raw);
    struct stat st {};
    if (fstat(ring_fd.get(), &st) != 0 || st.st_size < static_cast<off_t>(sizeof(shm::RingHeader))) {
      return Status(ErrorCode::kPeerLost, "ring descriptor is not a ring");
    }
    size_t size = static_cast<size_t>(st.st_size);
    void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd.get(), 0);
    if (base == MAP_FAILED) return Status(ErrorCode::kSystem, "mmap of the peer's ring failed: " + errnoText(errno));
    auto mapping = std::make_unique<RingMapping>(base, size);
    shm::RingHeader* h = mapping->ring().header();
    uint64_t cap = h->capacity;
    if (h->magic != shm::kRingMagic || cap == 0 || (cap & (cap - 1)) != 0 || shm::Ring::mappingSize(cap) != size) {
      return Status(ErrorCode::kPeerLost, "peer's ring header is malformed");
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    getsockopt(p.fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len);
    ShmHello hello = decode(p.auth.peerHello());
    uint64_t probe = 0;
    iovec local{&probe, sizeof(probe)}, remote{reinterpret_cast<void*>(hello.probe_address), sizeof(probe)};
    bool cma = process_vm_readv(cred.pid, &local, 1, &remote, 1, 0) == sizeof(probe) && probe == g_probe_word;
    if (!cma) MSC_LOG_INFO("shm transport: cannot read pid %d's memory (%s); large messages go through the ring", cred.pid, errnoText(errno).c_str());
    h->cma_ok.store(cma ? 1 : 0, std::memory_order_release);
    *made = std::make_unique<ShmRecvComm>(std::move(p.fd), std::move(mapping), cred.pid, hello.local_id,
                                          "peer " + std::to_string(hello.local_id) + " (pid " + std::to_string(cred.pid) + ")");
    return Status::ok();
  }

  TransportOptions options_;
  std::string name_;
  Fd fd_;
  Address address_;
  std::vector<std::unique_ptr<Pending>> pending_;
  std::vector<std::unique_ptr<RecvComm>> ready_;
};

class ShmConnector : public Connector {
 public:
  ShmConnector(const TransportOptions& options, std::string name, uint64_t local_id)
      : options_(options), name_(std::move(name)),
        auth_(AuthSession::Role::kClient, options.secret,
              encode(ShmHello{local_id, reinterpret_cast<uint64_t>(&g_probe_word)})),
        deadline_(deadlineAfter(std::chrono::milliseconds(options.handshake_timeout_ms))) {}

  Status poll(std::unique_ptr<SendComm>* comm) override {
    Status s = step(comm);
    if (!s.isOk()) return Status(s.code(), "shm connect to " + name_ + ": " + s.message());
    if (!*comm && Clock::now() > deadline_) return Status(ErrorCode::kTimeout, "shm connect to " + name_ + ": timed out");
    return Status::ok();
  }

  bool appendReadiness(std::vector<pollfd>& fds) const override {
    if (!fd_.valid()) return false;  // the backlog was full: retry soon
    fds.push_back(pollfd{fd_.get(), auth_.wantedEvents(), 0});
    return true;
  }

 private:
  Status step(std::unique_ptr<SendComm>* comm) {
    if (!fd_.valid()) {
      fd_ = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      socklen_t len;
      sockaddr_un addr = abstractAddress(name_, &len);
      if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        int err = errno;
        fd_.reset();
        if (err == EAGAIN) return Status::ok();  // backlog full: try again
        return Status(ErrorCode::kPeerLost, "connect failed: " + errnoText(err) + " (is the peer on this host?)");
      }
    }
    bool authenticated = false;
    MSC_RETURN_IF_ERROR(auth_.progress(fd_.get(), &authenticated));
    if (!authenticated) return Status::ok();
    // Let the receiver read our memory directly (Yama may otherwise allow only ancestors).
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    uint64_t capacity = roundUpToPowerOfTwo(options_.shm.ring_bytes);
    size_t size = shm::Ring::mappingSize(capacity);
    Fd ring_fd(memfd_create("megascale-ring", MFD_CLOEXEC));
    if (!ring_fd.valid() || ftruncate(ring_fd.get(), static_cast<off_t>(size)) != 0) {
      return Status(ErrorCode::kSystem, "cannot create a " + std::to_string(size) + "-byte ring: " + errnoText(errno));
    }
    void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd.get(), 0);
    if (base == MAP_FAILED) return Status(ErrorCode::kSystem, "mmap of the ring failed: " + errnoText(errno));
    auto mapping = std::make_unique<RingMapping>(base, size);
    shm::RingHeader* h = mapping->ring().header();
    h->capacity = capacity;
    h->magic = shm::kRingMagic;
    char byte = 'R';
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    int raw = ring_fd.get();
    std::memcpy(CMSG_DATA(c), &raw, sizeof(int));
    if (::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL) != 1) {
      return Status(ErrorCode::kPeerLost, "sending the ring descriptor failed: " + errnoText(errno));
    }
    *comm = std::make_unique<ShmSendComm>(std::move(fd_), std::move(mapping), ShmTransport::kRemoteMinBytes, name_);
    return Status::ok();
  }

  TransportOptions options_;
  std::string name_;
  AuthSession auth_;
  Deadline deadline_;
  Fd fd_;
};

}  // namespace

std::string hostIdentity() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  if (id.empty()) id = "unknown-host";
  // Network namespaces on one kernel are separate hosts to us: the handshake's abstract Unix socket lives in
  // the namespace, as on a machine of its own.
  struct stat ns {};
  if (stat("/proc/self/ns/net", &ns) == 0) id += "/" + std::to_string(ns.st_ino);
  return id;
}

namespace {

// "shm:<host identity>:<socket name>" -> the host identity; "" when the address is not shm's.
std::string addressHost(const std::string& text) {
  const size_t colon = text.find(':', sizeof(kAddressPrefix) - 1);
  if (text.rfind(kAddressPrefix, 0) != 0 || colon == std::string::npos) return "";
  return text.substr(sizeof(kAddressPrefix) - 1, colon - (sizeof(kAddressPrefix) - 1));
}

}  // namespace

ShmTransport::ShmTransport(const TransportOptions& options) : options_(options) {
  properties_.name = "shm";
  properties_.speed_gbps = 100;
  properties_.latency_us = 1;
  properties_.max_recvs = kMaxRecvs;
  properties_.same_host_only = true;
}

std::unique_ptr<Listener> ShmTransport::listen() { return std::make_unique<ShmListener>(options_); }

bool ShmTransport::reaches(const Address& address) const { return addressHost(address.asString()) == hostIdentity(); }

std::unique_ptr<Connector> ShmTransport::connect(const Address& address, uint64_t local_id) {
  std::string text = address.asString();
  const std::string host = addressHost(text);
  if (host.empty()) throw Error(ErrorCode::kInvalidArgument, "shm connect: '" + text + "' is not a shm transport address");
  if (host != hostIdentity()) {
    throw Error(ErrorCode::kInvalidArgument, "shm connect: the peer is on another host (use MEGASCALE_TRANSPORT=auto or tcp)");
  }
  return std::make_unique<ShmConnector>(options_, text.substr(text.find(':', sizeof(kAddressPrefix) - 1) + 1), local_id);
}

}  // namespace megascale::transport
