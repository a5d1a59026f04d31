// Finding the interfaces the emulated NICs sit on, and what a port reports about its link.
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "testbed/roce/emulated.h"

namespace megascale::testbed::roce {

namespace {

// Interface flags, MTU and MAC by ioctl: it answers for the caller's network namespace (sysfs may not).
bool readInterface(Netdev* n) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq req{};
  std::strncpy(req.ifr_name, n->name.c_str(), IFNAMSIZ - 1);
  if (ioctl(fd, SIOCGIFMTU, &req) == 0) n->mtu = req.ifr_mtu;
  if (ioctl(fd, SIOCGIFHWADDR, &req) == 0) std::memcpy(n->mac, req.ifr_hwaddr.sa_data, 6);
  close(fd);
  n->ifindex = static_cast<int>(if_nametoindex(n->name.c_str()));
  return n->ifindex > 0;
}

// EMU_ROCE_NETDEVS: devices separated by ',', a device's ports by '+' ("rail0,rail1+rail2"); empty: not set.
std::vector<std::vector<std::string>> wantedDevices() {
  std::vector<std::vector<std::string>> devices;
  const char* list = std::getenv("EMU_ROCE_NETDEVS");
  if (list == nullptr) return devices;
  std::stringstream in(list);
  for (std::string entry; std::getline(in, entry, ',');) {
    std::vector<std::string> ports;
    std::stringstream names(entry);
    for (std::string name; std::getline(names, name, '+');) {
      if (!name.empty()) ports.push_back(name);
    }
    if (!ports.empty()) devices.push_back(ports);
  }
  return devices;
}

// Every interface with an IPv4 address (its first), in the order getifaddrs lists them.
std::vector<Netdev> ipv4Interfaces(std::vector<bool>* loopback) {
  std::vector<Netdev> found;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return found;
  for (ifaddrs* a = all; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    Netdev n;
    n.name = a->ifa_name;
    n.ipv4 = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr;
    bool duplicate = false;
    for (const Netdev& f : found) duplicate = duplicate || f.name == n.name;
    if (duplicate || !readInterface(&n)) continue;
    found.push_back(n);
    loopback->push_back((a->ifa_flags & IFF_LOOPBACK) != 0);
  }
  freeifaddrs(all);
  return found;
}

// The devices' ports: those EMU_ROCE_NETDEVS names (a device whose interfaces are not all here is left out,
// at most kMaxPorts each), else a single-port device per interface but lo, else lo.
std::vector<std::vector<Netdev>> findPorts() {
  std::vector<bool> loopback;
  const std::vector<Netdev> interfaces = ipv4Interfaces(&loopback);
  std::vector<std::vector<Netdev>> devices;
  const auto wanted = wantedDevices();
  if (!wanted.empty()) {
    for (const auto& names : wanted) {
      std::vector<Netdev> ports;
      for (const std::string& name : names) {
        for (const Netdev& n : interfaces) {
          if (n.name == name) ports.push_back(n);
        }
      }
      if (ports.size() == names.size() && ports.size() <= static_cast<size_t>(kMaxPorts)) devices.push_back(ports);
    }
    return devices;
  }
  for (size_t i = 0; i < interfaces.size(); ++i) {
    if (!loopback[i]) devices.push_back({interfaces[i]});
  }
  if (devices.empty()) {
    for (size_t i = 0; i < interfaces.size(); ++i) {
      if (loopback[i]) devices.push_back({interfaces[i]});
    }
  }
  return devices;
}

uint64_t guidFromMac(const uint8_t mac[6], int index) {
  // EUI-64 from the MAC (ff:fe in the middle, universal/local bit flipped); loopback's zero MAC gets the index.
  uint8_t g[8] = {static_cast<uint8_t>(mac[0] ^ 2), mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4],
                  static_cast<uint8_t>(mac[5] + index)};
  uint64_t guid;
  std::memcpy(&guid, g, sizeof(guid));
  return guid;
}

}  // namespace

const std::vector<EmuDevice*>& emulatedDevices() {
  // Never destroyed (a device list's entries may be used until exit), and reachable from a global for LeakSanitizer.
  static const std::vector<EmuDevice*>& devices = *new std::vector<EmuDevice*>([] {
    std::vector<EmuDevice*> out;
    int index = 0;
    for (const std::vector<Netdev>& ports : findPorts()) {
      auto* d = new EmuDevice{};
      d->ports = ports;
      d->guid = guidFromMac(ports.front().mac, index);
      const char* link_layer = std::getenv("EMU_ROCE_LINK_LAYER");
      d->infiniband = link_layer != nullptr && std::strcmp(link_layer, "infiniband") == 0;
      d->device.node_type = IBV_NODE_CA;
      d->device.transport_type = IBV_TRANSPORT_IB;  // RoCE reports the IB transport
      std::snprintf(d->device.name, sizeof(d->device.name), "emroce%d", index);
      std::snprintf(d->device.dev_name, sizeof(d->device.dev_name), "uverbs%d", index);
      std::snprintf(d->device.dev_path, sizeof(d->device.dev_path), "/megascale-emulated/uverbs%d", index);
      std::snprintf(d->device.ibdev_path, sizeof(d->device.ibdev_path), "/megascale-emulated/emroce%d", index);
      out.push_back(d);
      ++index;
    }
    return out;
  }());
  return devices;
}

ibv_port_state linkState(const Netdev& netdev) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return IBV_PORT_DOWN;
  ifreq req{};
  std::strncpy(req.ifr_name, netdev.name.c_str(), IFNAMSIZ - 1);
  bool up = ioctl(fd, SIOCGIFFLAGS, &req) == 0 && (req.ifr_flags & IFF_UP) && (req.ifr_flags & IFF_RUNNING);
  close(fd);
  return up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
}

ibv_gid roceGid(in_addr ipv4) {
  ibv_gid gid{};
  gid.raw[10] = 0xff;
  gid.raw[11] = 0xff;
  std::memcpy(&gid.raw[12], &ipv4, 4);
  return gid;
}

ibv_gid ibGid(in_addr ipv4) {
  ibv_gid gid{};
  gid.raw[0] = 0xfe;
  gid.raw[1] = 0x80;
  gid.raw[8] = 0x02;  // a locally administered interface id
  gid.raw[11] = 0xfe;
  std::memcpy(&gid.raw[12], &ipv4, 4);
  return gid;
}

bool gidToIpv4(const ibv_gid& gid, in_addr* ipv4) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  const ibv_gid ib = ibGid(in_addr{});
  if (std::memcmp(gid.raw, prefix, sizeof(prefix)) != 0 && std::memcmp(gid.raw, ib.raw, 12) != 0) return false;
  std::memcpy(ipv4, &gid.raw[12], 4);
  return true;
}

in_addr lidToIpv4(uint16_t lid, in_addr local) {
  in_addr peer;
  peer.s_addr = htonl((ntohl(local.s_addr) & 0xffff0000u) | lid);
  return peer;
}

uint16_t EmuDevice::lid(uint32_t port) const {
  return static_cast<uint16_t>(ntohl(netdev(port).ipv4.s_addr) & 0xffff);
}

int fail(int error) {
  errno = error;
  return error;
}

}  // namespace megascale::testbed::roce
