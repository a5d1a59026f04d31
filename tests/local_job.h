// A job of ranks-as-threads: a fresh unique id and the embedded store server on loopback, for the tests that
// build communicators inside one process.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/tcp_store_server.h"

namespace megascale::test_support {

struct LocalJob {
  LocalJob() { server = startLoopbackStore(&id); }

  UniqueId id;
  std::unique_ptr<TcpStoreServer> server;
};

}  // namespace megascale::test_support
