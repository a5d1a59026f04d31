// Replicas of the checkpoints in host memory on another host (stage 1 of the two-stage checkpoints survives the
// loss of its host): every executor serves its replicas over TCP, authenticated with the job secret, and pushes
// the files its ranks write to the executor of the next host slot; a host that takes over a slot fetches that
// slot's files from the replica before its ranks start.
//   request:  "MSRP" u32 op (1 put, 2 fetch, 3 probe) u32 path length u64 body length, path, body (put: the
//             file; probe: a known pattern)
//   put:      answered with u32 0 once the file is in place (written aside, then renamed)
//   fetch:    the path names a directory; answered with one record per file under it (u32 path length,
//             u64 size, path, bytes) and a record of path length 0
//   probe:    the driver's link check: no path; the body is checked against the pattern as it arrives and
//             dropped, answered with u32 0 (exact) or 1 (a byte differed)
// Paths are relative, of [A-Za-z0-9_.-/], without "..": a hostile or broken peer gets its connection closed
// and a log line, never a write outside the replica directory.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/socket.h"

namespace megascale::launcher {

/// The file's bytes, read front to back in one go. Throws Error naming the file.
std::string readWholeFile(const std::string& path);

/// True for a relative path of allowed characters without "..", up to 256 bytes.
bool safeReplicaPath(const std::string& path);

class ReplicaServer {
 public:
  /// Serves `dir` on host:0 (the address this host reaches the store from) in a thread of its own. Each
  /// request must finish within `io_timeout`.
  ReplicaServer(std::string dir, const std::string& host, std::string secret, std::chrono::milliseconds io_timeout,
                std::FILE* log);
  ~ReplicaServer();
  ReplicaServer(const ReplicaServer&) = delete;
  ReplicaServer& operator=(const ReplicaServer&) = delete;

  /// "ip:port".
  const std::string& address() const { return address_; }

 private:
  void serve();
  void handle(int fd);
  std::string dir_;
  std::string secret_;
  std::chrono::milliseconds io_timeout_;
  std::FILE* log_;
  Fd listener_;
  Fd wake_;  // an eventfd: the destructor stops the thread
  std::string address_;
  std::thread thread_;
};

/// A connection to another executor's ReplicaServer. Every call throws Error naming `peer` (its host) and the
/// operation on failure.
class ReplicaClient {
 public:
  /// Connecting and the handshake must finish within `connect_timeout` (a peer that is not there is told apart
  /// sooner than a slow transfer), every request within `timeout`.
  ReplicaClient(const std::string& address, const std::string& peer, const std::string& secret,
                std::chrono::milliseconds timeout, std::chrono::milliseconds connect_timeout);
  ReplicaClient(const std::string& address, const std::string& peer, const std::string& secret,
                std::chrono::milliseconds timeout)
      : ReplicaClient(address, peer, secret, timeout, timeout) {}
  /// From another thread: the call under way (and every later one) fails at once. For a pusher whose target
  /// moved away from a peer that may be gone.
  void interrupt();
  /// Stores `contents` at `path` under the server's directory.
  void put(const std::string& path, const std::string& contents);
  /// Every file under the server's `dir`, by path relative to the server's directory.
  std::map<std::string, std::string> fetch(const std::string& dir);
  /// Sends `bytes` of a known pattern that the server checks; the rate it got there and back in GB/s. Throws
  /// Error when the server found a byte wrong.
  double probe(uint64_t bytes);

 private:
  void request(uint32_t op, const std::string& path, const std::string& body);
  Fd fd_;
  std::string peer_;
  std::chrono::milliseconds timeout_;
};

/// Which files of `dir` changed since the last call (by size and modification time): the pusher's memory.
class ChangedFiles {
 public:
  explicit ChangedFiles(std::string dir) : dir_(std::move(dir)) {}
  /// Paths relative to dir, under the given top-level directories only.
  std::vector<std::string> scan(const std::vector<std::string>& tops);
  /// Forget a file, so the next scan offers it again (its push failed).
  void forget(const std::string& path) { seen_.erase(path); }

 private:
  std::string dir_;
  std::map<std::string, std::pair<uint64_t, int64_t>> seen_;  // size, mtime in ns
};

}  // namespace megascale::launcher
