// Starts a real store of each backend for the tests: the embedded TCP server in-process, or a real
// redis-server process on a loopback port with the job's derived password.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "bootstrap/redis_store.h"
#include "bootstrap/store.h"
#include "bootstrap/tcp_store_server.h"
#include "testbed/redis_server.h"
#include "bootstrap/unique_id.h"

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
  RedisBackend() : server_(&id_) {}
  UniqueId id() const override { return id_; }
  std::string unavailable() const override {
#ifndef MEGASCALE_WITH_HIREDIS
    return "built without hiredis";
#else
    return server_.unavailable();
#endif
  }
  void kill() override { server_.kill(); }

 private:
  UniqueId id_;
  testbed::RedisServer server_;
};

}  // namespace megascale::testing
