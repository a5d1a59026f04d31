#include "bootstrap/launcher_channel.h"

#include "bootstrap/local_address.h"
#include "common/config.h"
#include "common/crypto.h"
#include "common/ipv4_interfaces.h"
#include "common/log.h"
#include "common/status.h"

namespace megascale {

std::string listenAddressFor(int world_size, int local_size, const std::string& toward) {
  const std::string configured = config::getString("MEGASCALE_TCP_IFADDR");
  if (!configured.empty()) return configured;
  if (local_size > 0 && local_size == world_size) return "127.0.0.1";
  if (!toward.empty()) {
    const std::string routed = localAddressToward(toward, 9);
    if (routed != "0.0.0.0") return routed;
  }
  for (const Ipv4Interface& nic : selectedIpv4Interfaces("")) {
    if (!nic.loopback) return nic.address;
  }
  return "127.0.0.1";
}

namespace {

std::unique_ptr<LauncherChannel> openChannel(const LaunchInfo& info, Deadline deadline) {
  if (info.rendezvous == Rendezvous::kPmix) return openPmixChannel();
  return openTorchStoreChannel(info.rendezvous_host, info.rendezvous_port, deadline);
}

void rendezvous(LaunchInfo& info, const StoreStarter& start, std::chrono::milliseconds timeout) {
  const Deadline deadline = deadlineAfter(timeout);
  std::unique_ptr<LauncherChannel> channel = openChannel(info, deadline);
  const std::string where = channel->name() + ", key " + info.rendezvous_key;
  if (info.rank == 0) {
    if (!info.secret_given) {
      info.id.secret.resize(32);
      randomBytes(info.id.secret.data(), info.id.secret.size());
    }
    const std::string host = listenAddressFor(info.world_size, info.local_size, info.rendezvous_host);
    const int port = start(host, info.id.secret);
    info.id.store_url = "tcp://" + host + ":" + std::to_string(port);
    std::string value = info.id.store_url;
    if (!info.secret_given) value += ";" + toHex(info.id.secret.data(), info.id.secret.size());
    channel->publish(info.rendezvous_key, value);
    MSC_LOG_INFO("store %s published through %s", info.id.store_url.c_str(), where.c_str());
  } else {
    const std::string value = channel->read(0, info.rendezvous_key, deadline);
    const size_t semi = value.find(';');
    info.id.store_url = value.substr(0, semi);
    if (!info.secret_given) {
      if (semi == std::string::npos) {
        throw Error(ErrorCode::kMismatch, where +
                                              ": rank 0 published no job secret (set MEGASCALE_JOB_SECRET on "
                                              "every rank or on none)");
      }
      info.id.secret = jobSecretFromHex(value.substr(semi + 1), where);
    }
    parseStoreUrl(info.id.store_url);
  }
  if (info.rendezvous == Rendezvous::kTorchAgentStore && !info.secret_given && info.rank == 0) {
    MSC_LOG_WARN(
        "the job secret travels through torchrun's agent store, which any host that reaches %s:%d can "
        "read: export the same random hex MEGASCALE_JOB_SECRET to every rank to keep it private",
        info.rendezvous_host.c_str(), info.rendezvous_port);
  }
}

}  // namespace

void completeLauncherRendezvous(LaunchInfo& info, const StoreStarter& start, std::chrono::milliseconds timeout) {
  if (info.rendezvous == Rendezvous::kKnown) return;
  try {
    rendezvous(info, start, timeout);
  } catch (const Error& e) {  // every error names the rank and how it was launched
    throw Error(e.code(), "launch: rank " + std::to_string(info.rank) + " of " + std::to_string(info.world_size) +
                              " (" + info.launcher + "): " + e.what());
  }
}

}  // namespace megascale
