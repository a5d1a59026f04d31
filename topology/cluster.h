// The cluster model: hosts with their ranks and NICs, each NIC on a rail, and the switches above them (a leaf
// switch per rail and group of hosts, as MegaScale's ToR per rail, then spines). Built from a Slurm
// topology.conf (slurm_topology.h) and from what each host discovers and publishes (host_record.h); printed by
// `megascale-run --print-topology`; used for rank placement (placement.h) and by topology-aware collectives.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace megascale::topology {

struct Nic {
  std::string name;     // "eth0"
  int rail = 0;         // NIC i of every host is on rail i
  int speed_mbps = 0;   // 0 when unknown
  std::string address;  // IPv4, "" when unknown
};

struct Host {
  std::string name;
  std::vector<Nic> nics;           // ordered by rail
  std::vector<int> ranks;          // the job's ranks on this host, in local-rank order
  std::vector<int> leaf_switches;  // per rail: index into Cluster::switches, -1 when not in the file
};

struct Switch {
  std::string name;
  int parent = -1;                // index into Cluster::switches; -1 at the top
  std::vector<int> children;      // switches below
  std::vector<int> hosts;         // hosts cabled to this switch (leaf switches)
  int rail = -1;                  // leaf switches: the rail they serve; -1 above the leaves
  std::string link_speed;         // LinkSpeed= as written; informational
};

struct Cluster {
  std::vector<Host> hosts;
  std::vector<Switch> switches;

  /// `hosts` hosts of `per_host` consecutive ranks each, named "host0", "host1", ... (a launcher's block
  /// placement: MEGASCALE_HOST_BLOCK, or one host of every rank).
  static Cluster blocks(int hosts, int per_host);
  /// A host per distinct key (equal keys: the same host; ranks that know only their host's identity), hosts in
  /// the order of their lowest rank, each named by its key in hex.
  static Cluster fromHostKeys(const std::vector<uint64_t>& keys);

  /// Index of the host or switch with this name; -1 when there is none.
  int findHost(std::string_view name) const;
  int findSwitch(std::string_view name) const;
  /// The most rails any host has, from its NICs or its leaf switches (at least 1).
  int railCount() const;
  /// Number of switch-to-switch and host-to-switch links between two hosts on `rail`: 0 for one host, 2 under
  /// one leaf switch, 4 through one switch above; -1 when the file does not connect them.
  int distance(int host_a, int host_b, int rail) const;
  /// The host each world rank is on (-1 for ranks no host claims), for `world_size` ranks.
  std::vector<int> hostOfRanks(int world_size) const;
  /// A text for people: switches top-down, then hosts with ranks, NICs and leaf switches.
  std::string describe() const;
};

}  // namespace megascale::topology
