// The host's IPv4 interfaces as the kernel lists them, and the selection syntax users know from
// NCCL_SOCKET_IFNAME. Kept in common/ because the bootstrap layer picks a store address with it and topology/
// describes the same interfaces further (speed, PCI path, NUMA node).
#pragma once

#include <string>
#include <vector>

namespace megascale {

struct Ipv4Interface {
  std::string name;          // "eth0"
  std::string address;       // "10.0.0.5"
  int prefix_length = 32;    // of the netmask: 24 for 255.255.255.0
  bool loopback = false;
};

/// Whether `name` is selected by `spec`: a comma-separated list of name prefixes ("eth,ib"), "=name" for an
/// exact name, and a leading "^" that turns the whole list into exclusions ("^docker,lo"). An empty spec
/// selects everything except loopback, docker* and virbr*.
bool interfaceSelected(const std::string& name, const std::string& spec);

/// The interfaces that are up, have an IPv4 address and are selected by `spec`, in the kernel's order. With an
/// empty spec and no other interface, the loopback interface.
std::vector<Ipv4Interface> selectedIpv4Interfaces(const std::string& spec);

}  // namespace megascale
