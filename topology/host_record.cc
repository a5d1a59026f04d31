#include "topology/host_record.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "common/config.h"
#include "topology/net_interfaces.h"
#include "topology/rails.h"

namespace megascale::topology {
namespace {

constexpr size_t kMaxNics = 64;
constexpr size_t kMaxName = 255;
constexpr const char* kMagic = "megascale-host-record 1";

[[noreturn]] void fail(const std::string& from, const std::string& why) {
  throw std::invalid_argument("host record from " + from + ": " + why);
}

bool plainName(std::string_view name) {
  if (name.empty() || name.size() > kMaxName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 127; });
}

int parseInt(const std::string& from, const std::string& text, int low, int high, const char* what) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos) {
    fail(from, std::string("bad ") + what + " '" + text.substr(0, 32) + "'");
  }
  const long value = std::stol(text);
  if (value < low || value > high) fail(from, std::string(what) + " " + text + " out of range");
  return static_cast<int>(value);
}

bool samePorts(const std::vector<Nic>& a, const std::vector<Nic>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Nic& x, const Nic& y) {
    return x.name == y.name && x.rail == y.rail && x.speed_mbps == y.speed_mbps && x.address == y.address;
  });
}

}  // namespace

std::string thisHostName() {
  std::string name = config::getString("MEGASCALE_HOST_NAME");
  if (name.empty()) {
    const char* slurm = std::getenv("SLURMD_NODENAME");
    if (slurm != nullptr) name = slurm;
  }
  if (name.empty()) {
    char buffer[256] = {};
    if (gethostname(buffer, sizeof(buffer) - 1) == 0) name = buffer;
  }
  return name.empty() ? "localhost" : name;
}

HostRecord discoverHostRecord(int rank, const std::string& interface_spec) {
  std::vector<NetInterface> found = discoverInterfaces(interface_spec);
  const bool only_loopback = std::all_of(found.begin(), found.end(), [](const NetInterface& i) { return i.loopback; });
  if (!only_loopback) {
    found.erase(std::remove_if(found.begin(), found.end(), [](const NetInterface& i) { return i.loopback; }),
                found.end());
  }
  sortIntoRails(found);
  HostRecord record{thisHostName(), rank, {}};
  for (size_t i = 0; i < found.size() && i < kMaxNics; ++i) {
    record.nics.push_back(Nic{found[i].name, static_cast<int>(i), found[i].speed_mbps, found[i].ipv4});
  }
  return record;
}

std::string encodeHostRecord(const HostRecord& record) {
  std::ostringstream out;
  out << kMagic << "\nhost " << record.host << "\nrank " << record.rank << "\n";
  for (const Nic& nic : record.nics) {
    out << "nic " << nic.name << " " << nic.speed_mbps << " " << (nic.address.empty() ? "-" : nic.address) << "\n";
  }
  return out.str();
}

HostRecord decodeHostRecord(std::string_view bytes, const std::string& from) {
  std::istringstream in{std::string(bytes)};
  std::string line;
  if (!std::getline(in, line) || line != kMagic) fail(from, "does not start with '" + std::string(kMagic) + "'");
  HostRecord record;
  bool have_host = false, have_rank = false;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind, a, b, c, extra;
    words >> kind >> a >> b >> c >> extra;
    if (!extra.empty()) fail(from, "too many fields in '" + line.substr(0, 64) + "'");
    if (kind == "host" && b.empty() && plainName(a) && !have_host) {
      record.host = a, have_host = true;
    } else if (kind == "rank" && b.empty() && !have_rank) {
      record.rank = parseInt(from, a, 0, 1 << 30, "rank"), have_rank = true;
    } else if (kind == "nic" && plainName(a) && plainName(c)) {
      if (record.nics.size() == kMaxNics) fail(from, "more than " + std::to_string(kMaxNics) + " NICs");
      const int rail = static_cast<int>(record.nics.size());
      record.nics.push_back(Nic{a, rail, parseInt(from, b, 0, 1 << 30, "NIC speed"), c == "-" ? "" : c});
    } else {
      fail(from, "unexpected line '" + line.substr(0, 64) + "'");
    }
  }
  if (!have_host || !have_rank) fail(from, "no host or no rank line");
  return record;
}

void mergeHostRecords(Cluster& cluster, const std::vector<HostRecord>& records) {
  for (const HostRecord& record : records) {
    const std::string from = "rank " + std::to_string(record.rank) + " on " + record.host;
    for (const Host& h : cluster.hosts) {
      if (std::find(h.ranks.begin(), h.ranks.end(), record.rank) != h.ranks.end()) {
        throw std::invalid_argument(from + ": rank " + std::to_string(record.rank) + " is already on host " + h.name);
      }
    }
    int index = cluster.findHost(record.host);
    if (index < 0) {
      cluster.hosts.push_back(Host{record.host, {}, {}, {}});
      index = static_cast<int>(cluster.hosts.size()) - 1;
    }
    Host& host = cluster.hosts[static_cast<size_t>(index)];
    if (host.ranks.empty()) {
      host.nics = record.nics;
    } else if (!samePorts(host.nics, record.nics)) {
      throw std::invalid_argument(from + " reports other NICs than rank " + std::to_string(host.ranks.front()) +
                                  " of the same host (MEGASCALE_NET_IF differs between them?)");
    }
    host.ranks.push_back(record.rank);
  }
}

}  // namespace megascale::topology
