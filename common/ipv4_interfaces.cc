#include "common/ipv4_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <sstream>

namespace megascale {

namespace {

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

bool matchesOne(const std::string& name, const std::string& pattern) {
  if (!pattern.empty() && pattern[0] == '=') return name == pattern.substr(1);
  return name.compare(0, pattern.size(), pattern) == 0;
}

Ipv4Interface describe(const ifaddrs* entry) {
  Ipv4Interface nic;
  nic.name = entry->ifa_name;
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr, text, sizeof(text));
  nic.address = text;
  if (entry->ifa_netmask != nullptr) {
    nic.prefix_length = __builtin_popcount(reinterpret_cast<const sockaddr_in*>(entry->ifa_netmask)->sin_addr.s_addr);
  }
  nic.loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0;
  return nic;
}

}  // namespace

bool interfaceSelected(const std::string& name, const std::string& spec) {
  if (spec.empty()) {
    return !(matchesOne(name, "lo") || matchesOne(name, "docker") || matchesOne(name, "virbr"));
  }
  const bool exclude = spec[0] == '^';
  for (const std::string& pattern : split(exclude ? spec.substr(1) : spec)) {
    if (matchesOne(name, pattern)) return !exclude;
  }
  return exclude;
}

std::vector<Ipv4Interface> selectedIpv4Interfaces(const std::string& spec) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  std::vector<Ipv4Interface> selected, loopback;
  for (const ifaddrs* e = list; e != nullptr; e = e->ifa_next) {
    if (e->ifa_addr == nullptr || e->ifa_addr->sa_family != AF_INET || (e->ifa_flags & IFF_UP) == 0) continue;
    Ipv4Interface nic = describe(e);
    if (interfaceSelected(nic.name, spec)) {
      selected.push_back(nic);
    } else if (nic.loopback) {
      loopback.push_back(nic);
    }
  }
  freeifaddrs(list);
  return selected.empty() && spec.empty() ? loopback : selected;
}

}  // namespace megascale
