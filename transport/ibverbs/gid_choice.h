// Which GID a port's queue pairs address each other by. A ConnectX lists a RoCE v1 and a RoCE v2 entry for each
// of its addresses, v1 first; routers do not carry RoCE v1 (it is an Ethernet frame, not UDP/IP), so taking
// the first IPv4-mapped GID would run a cluster's job on v1. The choice reads each entry's type (the GID
// table's `gid_type`, or sysfs gid_attrs/types) and asks for RoCE v2 and IPv4 by default, as NCCL does
// (NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY, NCCL_IB_GID_INDEX). Native InfiniBand addresses by LID; its
// GID (index 0, the port GID) is used only where a global route is asked for. No libibverbs here: the rules
// are tested on any machine.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace megascale::transport {

enum class GidType : uint8_t { kInfiniBand, kRoceV1, kRoceV2 };
const char* gidTypeName(GidType type);  // "IB", "RoCE v1", "RoCE v2"

struct GidEntry {
  int index = 0;
  std::array<uint8_t, 16> raw{};
  GidType type = GidType::kRoceV2;

  bool empty() const;       // all zero: an unused slot of the table
  bool ipv4Mapped() const;  // ::ffff:a.b.c.d
  bool linkLocal() const;   // fe80::/10
  /// "::ffff:10.0.0.1" or the IPv6 text.
  std::string address() const;
};

struct GidPreference {
  int index = -1;         // MEGASCALE_IB_GID_INDEX; -1: chosen by the rules below
  int roce_version = 2;   // MEGASCALE_IB_ROCE_VERSION: 1 or 2
  bool ipv6 = false;      // MEGASCALE_IB_ADDR_FAMILY=AF_INET6
};

/// The GID for a port whose link layer is Ethernet (RoCE) or InfiniBand (`infiniband`). An explicit index
/// wins if that slot holds a GID. Otherwise, RoCE: the lowest index of the asked version whose address is of
/// the asked family (IPv6: not link-local where a routable one exists); InfiniBand: index 0. kInvalidArgument
/// naming `device`, the preference and every entry of the table when nothing fits.
Status chooseGid(const std::vector<GidEntry>& table, const GidPreference& want, bool infiniband,
                 const std::string& device, GidEntry* chosen);

/// Whether a queue pair addresses its peer through the GRH (the GID) rather than by LID alone: always on RoCE
/// (Ethernet has no LIDs); on InfiniBand when asked (MEGASCALE_IB_ROUTE_GLOBAL) or when the peer's GID has
/// another subnet prefix (its first 8 bytes), which only a router reaches - as NCCL decides.
bool routeGlobally(bool infiniband, bool asked, const uint8_t local_gid[16], const uint8_t remote_gid[16]);

/// The sysfs type text (gid_attrs/types/<index>: "IB/RoCE v1", "RoCE v2") as a type; false when unknown.
bool parseGidTypeText(const std::string& text, GidType* type);

}  // namespace megascale::transport
