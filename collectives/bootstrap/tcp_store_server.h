// The embedded store server: one thread, one epoll set, any number of clients (no thread per client).
// Clients authenticate first (common/auth.h); until then they cannot read or write a key. A waiting get/wait
// parks only its connection; a set wakes exactly the connections waiting on that key.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collectives/bootstrap/unique_id.h"
#include "common/auth.h"
#include "common/socket.h"

namespace megascale {

class TcpStoreServer {
 public:
  struct Options {
    std::string host = "0.0.0.0";
    int port = 0;  // 0: the kernel picks one; see port()
    std::string secret;
    std::chrono::milliseconds handshake_timeout{10000};  // slow or silent clients are dropped after this
  };

  /// Binds and listens at once, so port() is valid and clients may connect before start(). Throws Error.
  explicit TcpStoreServer(Options options);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }
  /// Serves on a background thread until stop() or destruction.
  void start();
  /// Serves on the calling thread until stop() is called from another thread or a signal handler.
  void run();
  /// Async-signal-safe.
  void stop();

  /// Connections open now (authenticated or not); for tests and monitoring.
  size_t connectionCount() const { return connection_count_.load(); }

 private:
  struct Connection;
  void acceptAll();
  void onReadable(Connection& c);
  void onWritable(Connection& c);
  void processInput(Connection& c);
  bool handleRequest(Connection& c, std::string_view body);  // false: park the connection
  bool tryCompleteParked(Connection& c);
  void wakeWaiters(const std::string& key);
  void reply(Connection& c, std::string frame);
  void flush(Connection& c);
  void close(Connection& c);
  void expireDeadlines();
  int nextTimeoutMs() const;
  void setDeadline(Connection& c, Deadline deadline);
  void clearDeadline(Connection& c);

  Options options_;
  Fd listen_fd_;
  Fd epoll_fd_;
  Fd wake_fd_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> connection_count_{0};
  std::thread thread_;

  std::unordered_map<int, std::unique_ptr<Connection>> connections_;
  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::vector<int>> waiters_;  // key -> fds parked on it
  std::set<std::pair<Deadline, int>> deadlines_;               // handshakes and parked waits
  std::vector<int> to_close_;
};

/// A fresh single-host job: sets *id to a new unique id whose store is a new server on 127.0.0.1 (ephemeral
/// port), started and returned. Used by megascale-run and by tests that run ranks as threads.
std::unique_ptr<TcpStoreServer> startLoopbackStore(UniqueId* id);

}  // namespace megascale
