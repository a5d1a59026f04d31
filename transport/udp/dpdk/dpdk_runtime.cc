#include "transport/udp/dpdk/dpdk_runtime.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>

#include <cstdio>
#include <sstream>
#include <vector>

#include "common/status.h"
#include "transport/udp/udp_socket.h"

namespace megascale::transport {

DpdkRuntime& DpdkRuntime::instance() {
  static DpdkRuntime runtime;
  return runtime;
}

void DpdkRuntime::start(const std::string& eal_args) {
  if (started_) {
    if (!start_error_.empty()) throw Error(ErrorCode::kUnavailable, start_error_);
    return;
  }
  started_ = true;
  // The EAL pins the calling thread to its lcore: the caller's affinity is put back, and its one lcore is a CPU
  // the caller may run on.
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  pthread_getaffinity_np(pthread_self(), sizeof(affinity), &affinity);
  int first_cpu = 0;
  while (first_cpu < CPU_SETSIZE && !CPU_ISSET(first_cpu, &affinity)) ++first_cpu;
  std::vector<std::string> args = {"megascale", "--no-shconf", "--no-huge", "-m", "256", "--no-pci",
                                   "--no-telemetry", "-l", std::to_string(first_cpu), "--log-level=lib.eal:error"};
  std::istringstream extra(eal_args);
  for (std::string a; extra >> a;) args.push_back(a);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  rte_openlog_stream(stderr);
  const int parsed = rte_eal_init(static_cast<int>(args.size()), argv.data());
  pthread_setaffinity_np(pthread_self(), sizeof(affinity), &affinity);
  if (parsed < 0) {
    std::string command;
    for (const std::string& a : args) command += " " + a;
    start_error_ = "udp: DPDK's EAL did not start (" + std::string(rte_strerror(rte_errno)) + ";" + command +
                   "): it needs root; MEGASCALE_UDP_DPDK_EAL adds arguments";
    throw Error(ErrorCode::kUnavailable, start_error_);
  }
}

std::shared_ptr<DpdkPort> DpdkRuntime::port(const std::string& ipv4, const std::string& eal_args) {
  std::lock_guard<std::mutex> guard(mutex_);
  start(eal_args);
  in_addr address{};
  if (inet_pton(AF_INET, ipv4.c_str(), &address) != 1) {
    throw Error(ErrorCode::kInvalidArgument, "udp: DPDK: '" + ipv4 + "' is not an IPv4 address");
  }
  if (std::shared_ptr<DpdkPort> held = ports_[address.s_addr].lock()) return held;
  const std::string interface = interfaceOf(ipv4);
  if (interface.empty()) throw Error(ErrorCode::kInvalidArgument, "udp: DPDK: no interface holds " + ipv4);
  auto port = std::make_shared<DpdkPort>(interface, address.s_addr, interfaceMtu(ipv4), devices_++);
  ports_[address.s_addr] = port;
  return port;
}

std::shared_ptr<DpdkPort> DpdkRuntime::localPort(uint32_t ipv4) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = ports_.find(ipv4);
  return it == ports_.end() ? nullptr : it->second.lock();
}

}  // namespace megascale::transport
