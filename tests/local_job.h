// A job of ranks-as-threads: a fresh unique id and the embedded store server on loopback, for the tests that
// build communicators inside one process.
#pragma once

#include <memory>
#include <string>

#include "collectives/bootstrap/tcp_store_server.h"
#include "collectives/bootstrap/unique_id.h"

namespace megascale::test_support {

struct LocalJob {
  LocalJob() : id(UniqueId::generate("tcp://127.0.0.1:1")) {
    TcpStoreServer::Options options;
    options.host = "127.0.0.1";
    options.secret = id.secret;
    server = std::make_unique<TcpStoreServer>(options);
    id.store_url = "tcp://127.0.0.1:" + std::to_string(server->port());
    server->start();
  }

  UniqueId id;
  std::unique_ptr<TcpStoreServer> server;
};

}  // namespace megascale::test_support
