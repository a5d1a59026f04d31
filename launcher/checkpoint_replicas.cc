#include "launcher/checkpoint_replicas.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/auth.h"
#include "common/status.h"

namespace megascale::launcher {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kMagic = 0x5052534d;  // "MSRP"
constexpr uint32_t kPut = 1, kFetch = 2, kProbe = 3;
constexpr size_t kMaxPath = 256;
constexpr uint64_t kMaxFile = uint64_t{64} << 30;
constexpr uint64_t kMaxProbe = uint64_t{1} << 30;
constexpr size_t kProbeChunk = size_t{1} << 20;

// The probe's bytes: position-dependent, so a dropped, repeated or reordered chunk shows.
void fillProbePattern(uint64_t offset, char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    const uint64_t at = offset + i;
    data[i] = static_cast<char>(((at * 0x9e3779b1u) >> 24) ^ (at >> 20));
  }
}

struct Header {
  uint32_t magic;
  uint32_t op;
  uint32_t path_length;
  uint32_t pad;
  uint64_t body_length;
};
static_assert(sizeof(Header) == 24);

void check(const Status& s) { s.throwIfError(); }


// Written aside and renamed: a reader never sees half a file.
void writeFileAtomically(const fs::path& path, const std::string& data) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path aside = path.string() + ".part";
  {
    std::ofstream out(aside, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) throw Error(ErrorCode::kSystem, "cannot write " + aside.string() + ": " + errnoText(errno));
  }
  fs::rename(aside, path, ec);
  if (ec) throw Error(ErrorCode::kSystem, "cannot rename " + aside.string() + ": " + ec.message());
}

std::string receive(int fd, uint64_t size, Deadline deadline, const char* what) {
  std::string data(size, '\0');
  check(recvAll(fd, data.data(), data.size(), deadline, what));
  return data;
}

}  // namespace

std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(ErrorCode::kSystem, "cannot open " + path);
  std::string data(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  // One read from the front (not a character at a time): a checkpoint slot's header stamp is read before its
  // state and its end stamp after, which is what tells a copy that caught a write (rank_slot_file.h).
  if (!in.read(data.data(), static_cast<std::streamsize>(data.size()))) {
    throw Error(ErrorCode::kSystem, "cannot read " + path + " (cut short while read?)");
  }
  return data;
}

bool safeReplicaPath(const std::string& path) {
  if (path.empty() || path.size() > kMaxPath || path.front() == '/') return false;
  for (char c : path) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-' && c != '/') return false;
  }
  for (const auto& part : fs::path(path)) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

ReplicaServer::ReplicaServer(std::string dir, const std::string& host, std::string secret,
                             std::chrono::milliseconds io_timeout, std::FILE* log)
    : dir_(std::move(dir)), secret_(std::move(secret)), io_timeout_(io_timeout), log_(log) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  sockaddr_in bound{};
  listener_ = listenTcp(host, 0, 16, &bound);
  address_ = formatAddress(bound);
  wake_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_.valid()) throw Error(ErrorCode::kSystem, "replica server: eventfd: " + errnoText(errno));
  thread_ = std::thread([this] { serve(); });
}

ReplicaServer::~ReplicaServer() {
  signalEventFd(wake_.get());
  thread_.join();
}

void ReplicaServer::serve() {
  while (true) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    Fd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client.valid()) continue;
    try {
      handle(client.get());
    } catch (const std::exception& e) {
      std::fprintf(log_, "megascale-run: checkpoint replicas: refused a request: %s\n", e.what());
    }
  }
}

void ReplicaServer::handle(int fd) {
  AuthSession auth(AuthSession::Role::kServer, secret_);
  check(AuthSession::runBlocking(auth, fd, deadlineAfter(io_timeout_), "replica server: a client"));
  while (true) {
    const Deadline deadline = deadlineAfter(io_timeout_);
    Header h{};
    const Status got = recvAll(fd, &h, sizeof(h), deadline, "replica server: reading a request");
    if (got.code() == ErrorCode::kPeerLost) return;  // the client is done
    check(got);
    if (h.magic != kMagic || (h.op != kPut && h.op != kFetch && h.op != kProbe) || h.path_length > kMaxPath ||
        h.body_length > kMaxFile || (h.op == kFetch && h.body_length != 0) ||
        (h.op == kProbe && (h.path_length != 0 || h.body_length > kMaxProbe))) {
      throw Error(ErrorCode::kPeerLost, "malformed request header (op " + std::to_string(h.op) + ", path length " +
                                            std::to_string(h.path_length) + ")");
    }
    if (h.op == kProbe) {
      std::string got(kProbeChunk, '\0'), want(kProbeChunk, '\0');
      uint32_t wrong = 0;
      for (uint64_t offset = 0; offset < h.body_length; offset += kProbeChunk) {
        const size_t size = static_cast<size_t>(std::min<uint64_t>(kProbeChunk, h.body_length - offset));
        check(recvAll(fd, got.data(), size, deadline, "replica server: a link probe"));
        fillProbePattern(offset, want.data(), size);
        if (std::memcmp(got.data(), want.data(), size) != 0) wrong = 1;
      }
      check(sendAll(fd, &wrong, sizeof(wrong), deadline, "replica server: answering a link probe"));
      continue;
    }
    const std::string path = receive(fd, h.path_length, deadline, "replica server: reading a path");
    if (!safeReplicaPath(path)) throw Error(ErrorCode::kPeerLost, "a path outside the replica directory: " + path);
    if (h.op == kPut) {
      writeFileAtomically(fs::path(dir_) / path, receive(fd, h.body_length, deadline, "replica server: a file"));
      const uint32_t ok = 0;
      check(sendAll(fd, &ok, sizeof(ok), deadline, "replica server: acknowledging a file"));
      continue;
    }
    std::error_code ec;
    const fs::path root = fs::path(dir_) / path;
    for (const auto& entry : fs::recursive_directory_iterator(root, ec)) {
      if (!entry.is_regular_file(ec) || entry.path().string().ends_with(".part")) continue;
      const std::string relative = fs::relative(entry.path(), dir_, ec).string();
      const std::string data = readWholeFile(entry.path().string());
      const uint32_t length = static_cast<uint32_t>(relative.size());
      const uint64_t size = data.size();
      check(sendAll(fd, &length, sizeof(length), deadline, "replica server: sending a file"));
      check(sendAll(fd, &size, sizeof(size), deadline, "replica server: sending a file"));
      check(sendAll(fd, relative.data(), relative.size(), deadline, "replica server: sending a file"));
      check(sendAll(fd, data.data(), data.size(), deadline, "replica server: sending a file"));
    }
    const uint32_t end = 0;
    const uint64_t none = 0;
    check(sendAll(fd, &end, sizeof(end), deadline, "replica server: ending a fetch"));
    check(sendAll(fd, &none, sizeof(none), deadline, "replica server: ending a fetch"));
  }
}

ReplicaClient::ReplicaClient(const std::string& address, const std::string& peer, const std::string& secret,
                             std::chrono::milliseconds timeout, std::chrono::milliseconds connect_timeout)
    : peer_(peer), timeout_(timeout) {
  const std::string what = "checkpoint replicas of " + peer + " at " + address;
  const Deadline deadline = deadlineAfter(connect_timeout);
  fd_ = connectTcp(parseHostPort(address), deadline, what);
  setNonBlocking(fd_.get());
  AuthSession auth(AuthSession::Role::kClient, secret);
  check(AuthSession::runBlocking(auth, fd_.get(), deadline, what));
}

void ReplicaClient::interrupt() { ::shutdown(fd_.get(), SHUT_RDWR); }

void ReplicaClient::request(uint32_t op, const std::string& path, const std::string& body) {
  const Header h{kMagic, op, static_cast<uint32_t>(path.size()), 0, body.size()};
  const Deadline deadline = deadlineAfter(timeout_);
  const std::string what = "sending to the checkpoint replicas of " + peer_;
  check(sendAll(fd_.get(), &h, sizeof(h), deadline, what.c_str()));
  check(sendAll(fd_.get(), path.data(), path.size(), deadline, what.c_str()));
  check(sendAll(fd_.get(), body.data(), body.size(), deadline, what.c_str()));
}

void ReplicaClient::put(const std::string& path, const std::string& contents) {
  if (!safeReplicaPath(path)) throw Error(ErrorCode::kInvalidArgument, "replica path " + path + " is not allowed");
  request(kPut, path, contents);
  uint32_t status = 1;
  const std::string what = "the checkpoint replicas of " + peer_ + " storing " + path;
  check(recvAll(fd_.get(), &status, sizeof(status), deadlineAfter(timeout_), what.c_str()));
  if (status != 0) throw Error(ErrorCode::kPeerLost, what + ": refused");
}

double ReplicaClient::probe(uint64_t bytes) {
  if (bytes == 0 || bytes > kMaxProbe) {
    throw Error(ErrorCode::kInvalidArgument, "a link probe of " + std::to_string(bytes) + " bytes (1 B to 1 GiB)");
  }
  std::string body(static_cast<size_t>(bytes), '\0');
  fillProbePattern(0, body.data(), body.size());
  const auto start = std::chrono::steady_clock::now();
  request(kProbe, "", body);
  uint32_t wrong = 1;
  const std::string what = "the link probe to " + peer_;
  check(recvAll(fd_.get(), &wrong, sizeof(wrong), deadlineAfter(timeout_), what.c_str()));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (wrong != 0) throw Error(ErrorCode::kPeerLost, what + ": the bytes arrived wrong");
  return static_cast<double>(bytes) / seconds / 1e9;
}

std::map<std::string, std::string> ReplicaClient::fetch(const std::string& dir) {
  if (!safeReplicaPath(dir)) throw Error(ErrorCode::kInvalidArgument, "replica path " + dir + " is not allowed");
  request(kFetch, dir, "");
  std::map<std::string, std::string> files;
  const std::string what = "fetching " + dir + " from the checkpoint replicas of " + peer_;
  const Deadline deadline = deadlineAfter(timeout_);
  while (true) {
    uint32_t length = 0;
    uint64_t size = 0;
    check(recvAll(fd_.get(), &length, sizeof(length), deadline, what.c_str()));
    check(recvAll(fd_.get(), &size, sizeof(size), deadline, what.c_str()));
    if (length == 0) return files;
    if (length > kMaxPath || size > kMaxFile) throw Error(ErrorCode::kPeerLost, what + ": a malformed record");
    std::string path = receive(fd_.get(), length, deadline, what.c_str());
    if (!safeReplicaPath(path) || !(path == dir || path.starts_with(dir + "/"))) {
      throw Error(ErrorCode::kPeerLost, what + ": a file outside the directory asked for (" + path + ")");
    }
    files[path] = receive(fd_.get(), size, deadline, what.c_str());
  }
}

std::vector<std::string> ChangedFiles::scan(const std::vector<std::string>& tops) {
  std::vector<std::string> changed;
  for (const std::string& top : tops) {
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(dir_) / top, ec)) {
      struct stat st {};
      if (!entry.is_regular_file(ec) || ::stat(entry.path().c_str(), &st) != 0) continue;
      const std::string relative = fs::relative(entry.path(), dir_, ec).string();
      const std::pair<uint64_t, int64_t> mark{static_cast<uint64_t>(st.st_size),
                                              int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
      auto it = seen_.find(relative);
      if (it != seen_.end() && it->second == mark) continue;
      seen_[relative] = mark;
      changed.push_back(relative);
    }
  }
  return changed;
}

}  // namespace megascale::launcher
