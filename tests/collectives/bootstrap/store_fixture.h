// Starts a real store of each backend for the tests: the embedded TCP server in-process, or a real
// redis-server process on a loopback port with the job's derived password.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "collectives/bootstrap/redis_store.h"
#include "collectives/bootstrap/store.h"
#include "collectives/bootstrap/tcp_store_server.h"
#include "collectives/bootstrap/unique_id.h"

namespace megascale::testing {

class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  virtual UniqueId id() const = 0;
  /// Empty if the backend can run here; otherwise why not (the test is skipped with this reason).
  virtual std::string unavailable() const { return {}; }
  virtual void kill() = 0;
};

class TcpBackend : public StoreBackend {
 public:
  TcpBackend() {
    id_ = UniqueId::generate("tcp://127.0.0.1:1");
    TcpStoreServer::Options options;
    options.host = "127.0.0.1";
    options.secret = id_.secret;
    options.handshake_timeout = std::chrono::milliseconds(500);
    server_ = std::make_unique<TcpStoreServer>(options);
    id_.store_url = "tcp://127.0.0.1:" + std::to_string(server_->port());
    server_->start();
  }
  UniqueId id() const override { return id_; }
  void kill() override { server_.reset(); }
  /// A new, empty server on the same port, as after a crash and restart.
  void restart() {
    TcpStoreServer::Options options;
    options.host = "127.0.0.1";
    options.secret = id_.secret;
    options.port = parseStoreUrl(id_.store_url).port;
    server_.reset();
    server_ = std::make_unique<TcpStoreServer>(options);
    server_->start();
  }
  TcpStoreServer* server() { return server_.get(); }

 private:
  UniqueId id_;
  std::unique_ptr<TcpStoreServer> server_;
};

class RedisBackend : public StoreBackend {
 public:
  RedisBackend() {
    if (access("/usr/bin/redis-server", X_OK) != 0) {
      why_ = "redis-server is not installed (scripts/setup.sh installs it)";
      return;
    }
    sockaddr_in bound{};
    int port;
    {
      Fd probe = listenTcp("127.0.0.1", 0, 1, &bound);
      port = ntohs(bound.sin_port);
    }
    id_ = UniqueId::generate("redis://127.0.0.1:" + std::to_string(port));
    std::string password = redisPasswordFor(id_);
    std::string port_text = std::to_string(port);
    pid_ = fork();
    if (pid_ == 0) {
      execl("/usr/bin/redis-server", "redis-server", "--port", port_text.c_str(), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--requirepass", password.c_str(), "--loglevel", "warning",
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~RedisBackend() override { kill(); }
  UniqueId id() const override { return id_; }
  std::string unavailable() const override {
#ifndef MEGASCALE_WITH_HIREDIS
    return "built without hiredis";
#else
    return why_;
#endif
  }
  void kill() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  UniqueId id_;
  pid_t pid_ = -1;
  std::string why_;
};

}  // namespace megascale::testing
