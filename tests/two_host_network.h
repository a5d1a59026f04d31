// Two "hosts" for multi-host tests on one machine: network namespaces joined by a veth pair (the cable), whose
// link can be rate-limited (tc tbf) and cut (ip link set down). Traffic stays inside the namespaces. Needs root
// and iproute2; unavailableReason() says why a test must skip otherwise.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace megascale::test_support {

class TwoHostNetwork {
 public:
  /// "" when namespaces can be made here, else the reason.
  static std::string unavailableReason() {
    if (geteuid() != 0) return "needs root for ip netns";
    if (std::system("ip netns list >/dev/null 2>&1") != 0) return "iproute2's ip netns is not usable";
    return "";
  }

  TwoHostNetwork() : suffix_(std::to_string(getpid())) {
    ok_ = run("ip netns add " + host(0)) && run("ip netns add " + host(1)) &&
          run("ip link add " + interface(0) + " netns " + host(0) + " type veth peer name " + interface(1) + " netns " +
              host(1));
    for (int i = 0; i < 2 && ok_; ++i) {
      ok_ = run("ip -n " + host(i) + " addr add " + address(i) + "/24 dev " + interface(i)) &&
            run("ip -n " + host(i) + " link set " + interface(i) + " up") &&
            run("ip -n " + host(i) + " link set lo up");
    }
  }
  ~TwoHostNetwork() {
    run("ip netns del " + host(0));  // the veth pair goes with its namespaces
    run("ip netns del " + host(1));
  }
  TwoHostNetwork(const TwoHostNetwork&) = delete;
  TwoHostNetwork& operator=(const TwoHostNetwork&) = delete;

  bool ok() const { return ok_; }
  std::string host(int i) const { return "ms" + suffix_ + (i == 0 ? "a" : "b"); }
  std::string interface(int i) const { return "msv" + suffix_ + (i == 0 ? "a" : "b"); }
  std::string address(int i) const { return i == 0 ? "10.213.0.1" : "10.213.0.2"; }
  /// A command line that runs `command` on host i.
  std::string on(int i, const std::string& command) const { return "ip netns exec " + host(i) + " " + command; }

  /// Host i sends at most `rate` (tc syntax: "200mbit").
  bool limitRate(int i, const std::string& rate) {
    return run("ip netns exec " + host(i) + " tc qdisc add dev " + interface(i) + " root tbf rate " + rate +
               " burst 32kb latency 100ms");
  }
  /// The cable is pulled at host i's end: nothing passes either way, and no one is told.
  bool cutLink(int i) { return run("ip -n " + host(i) + " link set " + interface(i) + " down"); }

 private:
  static bool run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

  std::string suffix_;
  bool ok_ = false;
};

}  // namespace megascale::test_support
