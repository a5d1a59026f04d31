// DPDK in this process: its EAL, started once by the first DPDK io (--no-shconf and --no-huge, so several
// processes on one host each run their own, no PCI scan, one lcore, logs on stderr, the caller's CPU affinity
// kept), and the rails' ports, one per interface, shared by every io while one holds it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "transport/udp/dpdk/dpdk_port.h"

namespace megascale::transport {

class DpdkRuntime {
 public:
  static DpdkRuntime& instance();
  /// Starts the EAL (once; `eal_args` are added to ours) and returns the port on the interface holding `ipv4`
  /// (dotted), attaching it if no io holds it. Throws Error naming the address and what failed.
  std::shared_ptr<DpdkPort> port(const std::string& ipv4, const std::string& eal_args);
  /// The port of this process holding `ipv4` (network order) while an io holds it; null otherwise.
  std::shared_ptr<DpdkPort> localPort(uint32_t ipv4);

 private:
  void start(const std::string& eal_args);  // lock held

  std::mutex mutex_;
  bool started_ = false;
  std::string start_error_;
  int devices_ = 0;
  std::map<uint32_t, std::weak_ptr<DpdkPort>> ports_;
};

}  // namespace megascale::transport
