// megascale-store: the embedded store as a standalone server, for jobs that span hosts.
// It prints the job secret (or reads it from MEGASCALE_JOB_SECRET) so every host can be given it.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bootstrap/redis_store.h"
#include "bootstrap/tcp_store_server.h"
#include "common/config.h"
#include "common/crypto.h"
#include "common/status.h"

namespace {
megascale::TcpStoreServer* g_server = nullptr;
void onSignal(int) {
  if (g_server != nullptr) g_server->stop();
}
}  // namespace

int main(int argc, char** argv) {
  using namespace megascale;
  std::string host = "0.0.0.0";
  int port = 29400;
  bool print_redis_password = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--print-redis-password") {
      print_redis_password = true;
    } else if ((a == "--host" || a == "--port") && i + 1 < argc) {
      if (a == "--host") host = argv[++i];
      else port = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: megascale-store [--host ADDR] [--port PORT]   serve a job's store\n"
                   "       megascale-store --print-redis-password        the requirepass a redis:// store needs\n"
                   "The job secret comes from MEGASCALE_JOB_SECRET (hex) or is generated and printed.\n");
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  std::string secret;
  const std::string hex = config::getString("MEGASCALE_JOB_SECRET");
  if (!hex.empty()) {
    try {
      secret = jobSecretFromHex(hex, "megascale-store: MEGASCALE_JOB_SECRET");
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
  } else if (print_redis_password) {
    std::fprintf(stderr, "megascale-store: --print-redis-password needs MEGASCALE_JOB_SECRET\n");
    return 2;
  } else {
    secret.resize(32);
    randomBytes(secret.data(), secret.size());
    std::printf("MEGASCALE_JOB_SECRET=%s\n", toHex(secret.data(), secret.size()).c_str());
  }
  if (print_redis_password) {
    UniqueId id;
    id.secret = secret;
    std::printf("%s\n", redisPasswordFor(id).c_str());
    return 0;
  }
  try {
    TcpStoreServer::Options options;
    options.host = host;
    options.port = port;
    options.secret = secret;
    TcpStoreServer server(options);
    g_server = &server;
    signal(SIGINT, onSignal);
    signal(SIGTERM, onSignal);
    std::printf("megascale-store listening on %s:%d\n", host.c_str(), server.port());
    std::fflush(stdout);
    server.run();
  } catch (const Error& e) {
    std::fprintf(stderr, "megascale-store: %s\n", e.what());
    return 1;
  }
  return 0;
}
