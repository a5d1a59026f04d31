// The emulated cluster (testbed/emulated_cluster.sh) for C++ tests: hosts as network namespaces with a NIC
// per rail ("rail0", "rail1", ...) and a bridge per rail as its switch. One implementation: every method runs
// the shell library, so tests, benchmarks and users' clusters are built the same way. The destructor removes
// the namespaces and bridges. Needs root and iproute2; unavailableReason() says why a test must skip otherwise.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

#ifndef MEGASCALE_SOURCE_DIR
#error "MEGASCALE_SOURCE_DIR must name the source tree (tests/CMakeLists.txt defines it)"
#endif

namespace megascale::testbed {

class EmulatedCluster {
 public:
  /// "" when namespaces can be made here, else the reason.
  static std::string unavailableReason() {
    if (geteuid() != 0) return "needs root for ip netns";
    if (std::system("ip netns list >/dev/null 2>&1") != 0) return "iproute2's ip netns is not usable";
    return "";
  }

  EmulatedCluster(int hosts, int rails = 1) : tag_("mt" + std::to_string(getpid())), hosts_(hosts), rails_(rails) {
    ok_ = shell("cluster_up " + std::to_string(hosts) + " " + std::to_string(rails));
  }
  ~EmulatedCluster() { shell("cluster_down"); }
  EmulatedCluster(const EmulatedCluster&) = delete;
  EmulatedCluster& operator=(const EmulatedCluster&) = delete;

  bool ok() const { return ok_; }
  std::string hostName(int i) const { return tag_ + "h" + std::to_string(i); }
  /// Host i's NIC on `rail` has this name inside the host.
  static std::string nic(int rail = 0) { return "rail" + std::to_string(rail); }
  std::string address(int i, int rail = 0) const {
    return "10." + std::to_string(214 + rail) + ".0." + std::to_string(i + 1);
  }
  /// A command line that runs `command` on host i (with MEGASCALE_HOST_NAME set to its name).
  std::string on(int i, const std::string& command) const {
    return "ip netns exec " + hostName(i) + " env MEGASCALE_HOST_NAME=" + hostName(i) + " " + command;
  }
  /// Every NIC sends at most `rate` (tc syntax: "200mbit").
  bool limitRate(const std::string& rate) const { return shell("hosts_rate " + rate); }
  /// The cable of host i on `rail` is pulled: nothing passes either way, and no one is told.
  bool cutLink(int i, int rail = 0) const { return shell("link_down " + std::to_string(i) + " " + std::to_string(rail)); }
  bool restoreLink(int i, int rail = 0) const {
    return shell("link_up " + std::to_string(i) + " " + std::to_string(rail));
  }
  /// Writes the cluster's switches as a Slurm topology.conf.
  bool writeTopology(const std::string& path) const { return shell("write_topology '" + path + "'"); }

 private:
  bool shell(const std::string& commands) const {
    const std::string script = "EMU_TAG=" + tag_ + " EMU_PERSIST=1; source " MEGASCALE_SOURCE_DIR
                               "/testbed/emulated_cluster.sh; EMU_HOSTS=" + std::to_string(hosts_) +
                               " EMU_RAILS=" + std::to_string(rails_) + "; " + commands;
    return std::system(("bash -c \"" + script + "\" >/dev/null 2>&1").c_str()) == 0;
  }

  std::string tag_;
  int hosts_, rails_;
  bool ok_ = false;
};

}  // namespace megascale::testbed
