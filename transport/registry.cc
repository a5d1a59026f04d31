#include "transport/registry.h"

#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/udp/udp_transport.h"
#ifdef MEGASCALE_WITH_IBVERBS
#include "transport/ibverbs/ib_transport.h"
#endif
#ifdef MEGASCALE_WITH_UCX
#include "transport/ucx/ucx_transport.h"
#endif

namespace megascale::transport {
namespace {

template <typename T>
std::unique_ptr<Transport> make(const TransportOptions& options) {
  return std::make_unique<T>(options);
}

bool always() { return true; }

/// Built, and taken by "auto" here.
bool automatic(const TransportInfo& t) { return t.missing == nullptr && t.chosen_by_auto != nullptr && t.chosen_by_auto(); }

std::string builtNames(bool network_only) {
  std::string names;
  for (const TransportInfo& t : transportRegistry()) {
    if (t.missing == nullptr && !(network_only && t.same_host_only)) names += (names.empty() ? "" : ", ") + std::string(t.name);
  }
  return names;
}

const TransportInfo& builtRow(const std::string& name, const char* knob_text) {
  const TransportInfo* t = findTransport(name);
  if (t == nullptr) {
    std::string all;
    for (const TransportInfo& row : transportRegistry()) all += (all.empty() ? "" : ", ") + std::string(row.name);
    throw Error(ErrorCode::kInvalidArgument, std::string(knob_text) + "'" + name + "': expected auto or one of " + all);
  }
  if (t->missing != nullptr) {
    throw Error(ErrorCode::kUnavailable, std::string(knob_text) + name + ": this build of megascale has no " + name +
                                             " transport (" + t->missing + "); built: " + builtNames(false));
  }
  return *t;
}

}  // namespace

const std::vector<TransportInfo>& transportRegistry() {
  static const std::vector<TransportInfo> rows = {
      {"shm", true, true, nullptr, make<ShmTransport>, always},
#ifdef MEGASCALE_WITH_IBVERBS
      {"ibverbs", false, false, nullptr, make<IbTransport>, IbTransport::deviceAvailable, IbTransport::nicCount},
#else
      {"ibverbs", false, false, "it needs libibverbs-dev at build time", nullptr},
#endif
#ifdef MEGASCALE_WITH_UCX
      {"ucx", false, false, nullptr, make<UcxTransport>},
#else
      {"ucx", false, false, "it needs libucx-dev at build time", nullptr},
#endif
      {"tcp", false, false, nullptr, make<TcpTransport>, always},
      {"udp", false, false, nullptr, make<UdpTransport>},
  };
  return rows;
}

const TransportInfo* findTransport(const std::string& name) {
  const std::string wanted = name == "ib" ? "ibverbs" : name;  // NCCL's name for it
  for (const TransportInfo& t : transportRegistry()) {
    if (wanted == t.name) return &t;
  }
  return nullptr;
}

std::unique_ptr<Transport> createTransport(const std::string& name, const TransportOptions& options) {
  return builtRow(name, "transport ").create(options);
}

std::vector<std::string> communicatorTransports(const std::string& requested, bool all_ranks_local) {
  if (requested != "auto") return {builtRow(requested, "MEGASCALE_TRANSPORT=").name};
  std::vector<std::string> names;
  for (const TransportInfo& t : transportRegistry()) {
    if (automatic(t) && (t.same_host_only || !all_ranks_local)) names.emplace_back(t.name);
  }
  return names;
}

std::string networkTransport(const std::string& requested) {
  if (requested == "auto") {
    for (const TransportInfo& t : transportRegistry()) {
      if (automatic(t) && !t.same_host_only) return t.name;
    }
  }
  const TransportInfo& t = builtRow(requested, "MEGASCALE_TRANSPORT=");
  if (t.same_host_only) {
    throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_TRANSPORT=" + requested +
                                                 ": it reaches only this host, and a network transport is needed here; "
                                                 "choose auto or one of " + builtNames(true));
  }
  return t.name;
}

}  // namespace megascale::transport
