// The embedded store server: a few event loops (one thread and one epoll set each) share the listening socket
// and any number of clients, with no thread per client. Clients authenticate first (common/auth.h); until then
// they cannot read or write a key. A get/wait whose keys are missing parks that one request, not its
// connection; a set wakes exactly the requests waiting on that key, on whichever loop holds them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bootstrap/unique_id.h"
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
    int threads = 0;  // event loops; 0: MEGASCALE_STORE_THREADS, else min(4, cores)
  };

  /// Binds and listens at once, so port() is valid and clients may connect before start(). Throws Error.
  explicit TcpStoreServer(Options options);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }
  /// Serves on background threads until stop() or destruction.
  void start();
  /// Serves on the calling thread (and the other loops' threads) until stop() is called from another thread or
  /// a signal handler.
  void run();
  /// Async-signal-safe.
  void stop();

  /// Connections open now (authenticated or not), and the most open at once; for tests and monitoring.
  size_t connectionCount() const { return connection_count_.load(); }
  size_t peakConnectionCount() const { return peak_connections_.load(); }
  int loops() const { return static_cast<int>(loops_.size()); }
  /// Random at construction: a client that reconnects and sees another value knows the store restarted.
  uint64_t incarnation() const { return incarnation_; }

 private:
  struct Connection;
  struct Loop;
  /// Which parked request to re-run: the connection's loop and fd, its serial (fds are reused) and the id.
  struct WaiterRef {
    uint32_t loop;
    int fd;
    uint64_t serial;
    uint32_t request;
  };

  void serve(Loop& loop);
  void acceptAll(Loop& loop);
  void onReadable(Loop& loop, Connection& c);
  void onWritable(Loop& loop, Connection& c);
  void processInput(Loop& loop, Connection& c);
  void handleRequest(Loop& loop, Connection& c, std::string_view body, bool rerun);
  /// A get/wait: replies if every key is there, else parks it (registering it on the missing keys).
  void answerOrPark(Loop& loop, Connection& c, uint32_t id, std::string_view body, bool get, bool rerun);
  void wakeWaiters(Loop& loop, const std::string& key);
  void rerunParked(Loop& loop, const WaiterRef& ref);
  void drainInbox(Loop& loop);
  void reply(Loop& loop, Connection& c, std::string frame);
  void flush(Loop& loop, Connection& c);
  void close(Loop& loop, Connection& c);
  void expireDeadlines(Loop& loop);
  void noteConnections(long delta);

  Options options_;
  Fd listen_fd_;
  int port_ = 0;
  uint64_t incarnation_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> connection_count_{0};
  std::atomic<size_t> peak_connections_{0};
  std::atomic<uint64_t> next_serial_{1};
  std::vector<std::unique_ptr<Loop>> loops_;
  std::vector<std::thread> threads_;

  // The keys and who waits on them, shared by the loops. Held only for map operations, never across I/O.
  std::mutex data_mutex_;
  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::vector<WaiterRef>> waiters_;
};

/// A fresh single-host job: sets *id to a new unique id whose store is a new server on 127.0.0.1 (ephemeral
/// port), started and returned. Used by megascale-run and by tests that run ranks as threads.
std::unique_ptr<TcpStoreServer> startLoopbackStore(UniqueId* id);

}  // namespace megascale
