#include "transport/ibverbs/gid_choice.h"

#include <arpa/inet.h>

#include <algorithm>

namespace megascale::transport {

const char* gidTypeName(GidType type) {
  switch (type) {
    case GidType::kInfiniBand: return "IB";
    case GidType::kRoceV1: return "RoCE v1";
    case GidType::kRoceV2: return "RoCE v2";
  }
  return "?";
}

bool GidEntry::empty() const {
  return std::all_of(raw.begin(), raw.end(), [](uint8_t b) { return b == 0; });
}

bool GidEntry::ipv4Mapped() const {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(prefix, prefix + 12, raw.begin());
}

bool GidEntry::linkLocal() const { return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80; }

std::string GidEntry::address() const {
  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, raw.data(), text, sizeof(text));
  return text;
}

bool routeGlobally(bool infiniband, bool asked, const uint8_t local_gid[16], const uint8_t remote_gid[16]) {
  return !infiniband || asked || !std::equal(local_gid, local_gid + 8, remote_gid);
}

bool parseGidTypeText(const std::string& text, GidType* type) {
  if (text.find("RoCE v2") != std::string::npos) {
    *type = GidType::kRoceV2;
  } else if (text.find("RoCE v1") != std::string::npos) {  // "IB/RoCE v1": v1 on an Ethernet port, IB on an IB one
    *type = GidType::kRoceV1;
  } else {
    return false;
  }
  return true;
}

namespace {

std::string describeTable(const std::vector<GidEntry>& table) {
  std::string text;
  for (const GidEntry& e : table) {
    if (e.empty()) continue;
    text += (text.empty() ? "" : ", ") + std::to_string(e.index) + " " + gidTypeName(e.type) + " " + e.address();
  }
  return text.empty() ? "no GIDs" : text;
}

}  // namespace

Status chooseGid(const std::vector<GidEntry>& table, const GidPreference& want, bool infiniband,
                 const std::string& device, GidEntry* chosen) {
  const auto refuse = [&](const std::string& why) {
    return Status(ErrorCode::kInvalidArgument, "ibverbs: " + device + ": " + why + " (its GID table: " + describeTable(table) + ")");
  };
  if (want.index >= 0) {
    for (const GidEntry& e : table) {
      if (e.index == want.index && !e.empty()) {
        *chosen = e;
        return Status::ok();
      }
    }
    return refuse("no GID at index " + std::to_string(want.index) + " (MEGASCALE_IB_GID_INDEX)");
  }
  if (infiniband) {
    for (const GidEntry& e : table) {
      if (e.index == 0 && !e.empty()) {
        *chosen = e;
        return Status::ok();
      }
    }
    return refuse("no port GID at index 0");
  }
  const GidType type = want.roce_version == 1 ? GidType::kRoceV1 : GidType::kRoceV2;
  const GidEntry* link_local = nullptr;  // IPv6: only where no routable address has the type (no router forwards it)
  for (const GidEntry& e : table) {
    if (e.empty() || e.type != type || e.ipv4Mapped() == want.ipv6) continue;
    if (!e.linkLocal()) {
      *chosen = e;
      return Status::ok();
    }
    if (link_local == nullptr) link_local = &e;
  }
  if (link_local == nullptr) {
    return refuse(std::string("no ") + gidTypeName(type) + " GID with an " + (want.ipv6 ? "IPv6" : "IPv4") +
                  " address (MEGASCALE_IB_ROCE_VERSION, MEGASCALE_IB_ADDR_FAMILY, MEGASCALE_IB_GID_INDEX choose another)");
  }
  *chosen = *link_local;
  return Status::ok();
}

}  // namespace megascale::transport
