// A real redis-server for one job, on a free loopback port, started with the password the job's secret
// derives (redisPasswordFor), so megascale's Redis store backend can talk to it. For tests and benchmarks;
// the destructor kills it. unavailable() says why there is none (not installed).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "bootstrap/redis_store.h"
#include "bootstrap/unique_id.h"
#include "common/socket.h"

namespace megascale::testbed {

class RedisServer {
 public:
  /// Starts one for a new job and sets *id to it (the URL names the server; the secret derives its password).
  /// maxclients: how many connections it accepts.
  explicit RedisServer(UniqueId* id, int maxclients = 10000) {
    if (access("/usr/bin/redis-server", X_OK) != 0) {
      why_ = "redis-server is not installed [missing: redis-server]";
      return;
    }
    sockaddr_in bound{};
    int port;
    {
      Fd probe = listenTcp("127.0.0.1", 0, 1, &bound);
      port = ntohs(bound.sin_port);
    }
    *id = UniqueId::generate("redis://127.0.0.1:" + std::to_string(port));
    const std::string password = redisPasswordFor(*id);
    const std::string port_text = std::to_string(port);
    const std::string clients = std::to_string(maxclients);
    pid_ = fork();
    if (pid_ == 0) {
      execl("/usr/bin/redis-server", "redis-server", "--port", port_text.c_str(), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--requirepass", password.c_str(), "--loglevel", "warning", "--maxclients",
            clients.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~RedisServer() { kill(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::string unavailable() const { return why_; }
  pid_t pid() const { return pid_; }
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  std::string why_;
};

}  // namespace megascale::testbed
