// A rendezvous service the launcher already runs (PMIx under mpirun or srun, torchrun's agent TCPStore),
// through which rank 0 hands the others its store's URL: no MASTER_ADDR/MASTER_PORT to invent, no port that
// can collide with the launcher's own. O(1) operations per rank and no barrier: rank 0 publishes one key,
// every other rank reads it (waiting until it is there, up to the timeout).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "bootstrap/launch_env.h"
#include "common/socket.h"

namespace megascale {

class LauncherChannel {
 public:
  virtual ~LauncherChannel() = default;
  /// "PMIx", "torchrun agent store at host:port": for messages.
  virtual std::string name() const = 0;
  /// Makes key = value visible to every rank of the job. Throws Error naming the channel.
  virtual void publish(const std::string& key, const std::string& value) = 0;
  /// The value rank `publisher` published under key, waiting for it until the deadline (Error kTimeout).
  virtual std::string read(int publisher, const std::string& key, Deadline deadline) = 0;
};

/// PMIx client of the launcher's PMIx server. Error(kUnavailable) if this build has no PMIx.
std::unique_ptr<LauncherChannel> openPmixChannel();
/// A client of a torch.distributed TCPStore (torch 1.13's wire protocol), as torchrun's agent serves it.
std::unique_ptr<LauncherChannel> openTorchStoreChannel(const std::string& host, int port, Deadline deadline);

/// Starts the job's store in this process: listens on host, a free port, with the secret; returns the port.
using StoreStarter = std::function<int(const std::string& host, const std::string& secret)>;

/// Finishes a launch whose store URL travels through the launcher (info.rendezvous is kPmix or
/// kTorchAgentStore): rank 0 starts the store with `start` and publishes "url;secret-hex" (the secret part
/// only when none was given), the others read it. Fills info.id. Throws Error naming rank, channel and key.
void completeLauncherRendezvous(LaunchInfo& info, const StoreStarter& start, std::chrono::milliseconds timeout);

/// The address a rank listens on (its store, its transport): MEGASCALE_TCP_IFADDR; loopback when every rank is
/// on this host (local_size == world_size); else the local address routed toward `toward` (the launcher's
/// host); else the first non-loopback interface.
std::string listenAddressFor(int world_size, int local_size, const std::string& toward);

}  // namespace megascale
