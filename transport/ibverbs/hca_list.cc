#include "transport/ibverbs/hca_list.h"

#include <cstdlib>

#include "common/status.h"

namespace megascale::transport {

HcaList HcaList::parse(const std::string& text) {
  HcaList list;
  list.text_ = text;
  size_t at = 0;
  if (at < text.size() && text[at] == '^') {
    list.exclude_ = true;
    ++at;
  }
  if (at < text.size() && text[at] == '=') {
    list.exact_ = true;
    ++at;
  }
  const auto bad = [&](const std::string& entry, const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "MEGASCALE_IB_HCA='" + text + "': entry '" + entry + "' " + why +
                                                  " (NCCL_IB_HCA syntax: [^][=]device[:port],...)");
  };
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    Entry e;
    const size_t colon = item.find(':');
    e.name = item.substr(0, colon);
    if (e.name.empty()) throw bad(item, "names no device");
    if (colon != std::string::npos) {
      const std::string port = item.substr(colon + 1);
      char* end = nullptr;
      const long p = std::strtol(port.c_str(), &end, 10);
      if (port.empty() || *end != '\0' || p < 1 || p > 255) throw bad(item, "has a port that is not 1..255");
      e.port = static_cast<int>(p);
    }
    list.entries_.push_back(e);
  }
  return list;
}

bool HcaList::selects(const std::string& name, int port) const {
  if (entries_.empty()) return true;
  bool listed = false;
  for (const Entry& e : entries_) {
    const bool named = exact_ ? name == e.name : name.compare(0, e.name.size(), e.name) == 0;
    if (named && (e.port == 0 || e.port == port)) listed = true;
  }
  return listed != exclude_;
}

}  // namespace megascale::transport
