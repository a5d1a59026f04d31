// Communicator::createFromEnvironment and the store servers a process hosts for its job.
#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/launch_env.h"
#include "bootstrap/launcher_channel.h"
#include "bootstrap/tcp_store_server.h"
#include "collectives/communicator.h"

namespace megascale {

namespace {

// They live as long as the process: other ranks may still read them after this rank's communicators go.
std::mutex g_servers_mutex;
std::vector<std::unique_ptr<TcpStoreServer>> g_servers;

}  // namespace

TcpStoreServer& startProcessStoreServer(const std::string& secret, const std::string& host, int port) {
  TcpStoreServer::Options options;
  options.host = host;
  options.port = port;
  options.secret = secret;
  auto server = std::make_unique<TcpStoreServer>(options);
  server->start();
  std::lock_guard<std::mutex> lock(g_servers_mutex);
  g_servers.push_back(std::move(server));
  return *g_servers.back();
}

std::shared_ptr<Communicator> Communicator::createFromEnvironment(CommunicatorOptions options) {
  LaunchInfo info = launchInfoFromEnvironment();
  completeLauncherRendezvous(
      info,
      [](const std::string& host, const std::string& secret) { return startProcessStoreServer(secret, host, 0).port(); },
      options.timeout);
  if (info.hosts_store) startProcessStoreServer(info.id.secret, "0.0.0.0", parseStoreUrl(info.id.store_url).port);
  options.local_rank = info.local_rank;
  options.local_size = info.local_size;
  return create(info.id, info.rank, info.world_size, std::move(options));
}

}  // namespace megascale
