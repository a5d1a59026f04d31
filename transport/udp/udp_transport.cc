#include "transport/udp/udp_transport.h"

#include <algorithm>
#include <any>
#include <cstring>

#include "common/ipv4_interfaces.h"
#include "transport/net_transport.h"
#include "transport/oob_endpoints.h"
#include "transport/udp/udp_comm.h"
#include "transport/udp/udp_congestion.h"

namespace megascale::transport {

namespace {

constexpr uint32_t kSetupMagic = 0x31445055;  // "UPD1"
constexpr int kMaxFlows = 64;

// What each side tells the other at setup: its connection id, its flows' endpoints and the payload it takes.
struct SetupBlob {
  uint32_t magic;
  uint32_t flows;
  uint64_t connection;
  uint32_t payload_bytes;
  uint32_t reserved;
  UdpEndpoint endpoints[kMaxFlows];

  std::string encode() const { return std::string(reinterpret_cast<const char*>(this), sizeof(*this)); }
  static Status decode(const std::string& blob, SetupBlob* out) {
    if (blob.size() != sizeof(SetupBlob)) {
      return Status(ErrorCode::kPeerLost, "udp: a setup blob of " + std::to_string(blob.size()) + " bytes (expected " +
                                              std::to_string(sizeof(SetupBlob)) + ")");
    }
    std::memcpy(out, blob.data(), sizeof(*out));
    if (out->magic != kSetupMagic || out->flows < 1 || out->flows > kMaxFlows || out->connection == 0 ||
        out->payload_bytes < 256 || out->payload_bytes > 65000) {
      return Status(ErrorCode::kPeerLost, "udp: a malformed setup blob (" + std::to_string(out->flows) + " flows, " +
                                              std::to_string(out->payload_bytes) + "-byte payloads)");
    }
    return Status::ok();
  }
  std::vector<UdpEndpoint> endpointList() const { return {endpoints, endpoints + flows}; }
};

SetupBlob localBlob(const UdpEngine& engine, uint64_t connection, size_t payload_bytes) {
  SetupBlob b{};
  b.magic = kSetupMagic;
  b.flows = static_cast<uint32_t>(engine.endpoints().size());
  b.connection = connection;
  b.payload_bytes = static_cast<uint32_t>(payload_bytes);
  std::copy(engine.endpoints().begin(), engine.endpoints().end(), b.endpoints);
  return b;
}

// A connection's paths from this engine's flows to a peer whose flows are at `remote`.
UdpPaths pathsTo(const UdpEngine& engine, const UdpOptions& options, const std::vector<UdpEndpoint>& remote) {
  return UdpPaths(static_cast<int>(engine.endpoints().size()), remote, options.path_down_ms * kMillisecond);
}

uint64_t reserveId(UdpEngine& engine) {
  std::lock_guard<std::mutex> guard(engine.mutex());
  return engine.newConnectionId();
}

// The addresses of the rails `spec` selects (MEGASCALE_UDP_RAILS; loopback only as `bind` itself), or `bind`
// alone when there is no spec. Throws when a spec selects nothing.
std::vector<std::string> railAddresses(const std::string& spec, const std::string& bind) {
  if (spec.empty()) return {bind};
  std::vector<std::string> rails;
  for (const Ipv4Interface& i : selectedIpv4Interfaces(spec)) {
    if (!i.loopback || i.address == bind) rails.push_back(i.address);
  }
  if (rails.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "udp: MEGASCALE_UDP_RAILS='" + spec + "' selects no interface that is up with an IPv4 address");
  }
  return rails;
}

}  // namespace

UdpTransport::UdpTransport(const TransportOptions& options)
    : options_(options), ipv4_(options.bind_address.empty() ? "127.0.0.1" : options.bind_address),
      rails_(railAddresses(options.udp.rails, ipv4_)) {
  if (rails_.size() * static_cast<size_t>(options.udp.flows) > static_cast<size_t>(kMaxFlows)) {
    throw Error(ErrorCode::kInvalidArgument, "udp: " + std::to_string(rails_.size()) + " rails x " +
                std::to_string(options.udp.flows) + " flows: at most " + std::to_string(kMaxFlows) + " sockets");
  }
  // Datagrams every rail carries unfragmented (jumbo frames at most: a lost fragment loses the whole packet).
  int mtu = 9000;
  for (const std::string& rail : rails_) mtu = std::min(mtu, interfaceMtu(rail));
  payload_bytes_ = options.udp.payload_bytes > 0 ? options.udp.payload_bytes
                                                 : static_cast<size_t>(mtu) - 28 - udp_wire::kDataHeaderBytes;
  // A connection sprays over every rail: its ceiling is their sum.
  const int64_t mbps = options.udp.line_mbps > 0 ? options.udp.line_mbps : interfaceSpeedMbps(rails_.front());
  line_bps_ = static_cast<double>(mbps > 0 ? mbps : 10000) * 1e6 * static_cast<double>(rails_.size());
  UdpIoSetup io;
  io.kind = options.udp.io;
  io.rails = rails_;
  io.flows = options.udp.flows;
  io.traffic_class = options.traffic_class;
  io.send_batch = options.udp.send_batch;
  io.gso = options.udp.gso;
  io.dpdk_eal_args = options.udp.dpdk_eal_args;
  io.dpdk_spin_us = options.udp.dpdk_spin_us;
  engine_ = std::make_shared<UdpEngine>(io);
  properties_.name = "udp";
  properties_.speed_gbps = line_bps_ / 1e9;
  properties_.latency_us = 20;
  properties_.max_recvs = kMaxRecvs;
  properties_.lanes = std::to_string(rails_.size()) + " rail(s) x " + std::to_string(options.udp.flows) +
                      " flow(s) per connection, " + options.udp.congestion +
                      ", " + std::to_string(payload_bytes_) + "-byte packets, " + options.udp.io + " io";
}

std::unique_ptr<Listener> UdpTransport::listen() {
  return std::make_unique<OobListener>(
      options_, "udp",
      // The listener may outlive this transport: what it needs is copied.
      [engine = engine_, options = options_.udp, payload = payload_bytes_](const OobRequest& request,
                                                                            std::string* reply, std::any* state) {
        SetupBlob remote;
        MSC_RETURN_IF_ERROR(SetupBlob::decode(request.blob, &remote));
        // The receiving half is attached now: the sender starts as soon as it has our answer.
        auto end = std::make_shared<UdpEnd<UdpReceiver>>();
        try {
          end->engine = engine;
          end->ready = std::make_unique<ReadySignal>();
          UdpReceiverSetup setup;
          setup.remote_connection = remote.connection;
          setup.peer = request.peer;
          end->half = std::make_unique<UdpReceiver>(setup, pathsTo(*engine, options, remote.endpointList()), *engine,
                                                    end->ready->notifier());
          const uint64_t id = reserveId(*engine);
          end->attachment = std::make_unique<UdpAttachment>(engine, id, end->half.get());
          *reply = localBlob(*engine, id, payload).encode();
        } catch (const Error& e) {
          return Status(e.code(), e.what());
        }
        *state = end;
        return Status::ok();
      },
      [](OobAccepted& a) {
        auto end = std::any_cast<std::shared_ptr<UdpEnd<UdpReceiver>>>(a.state);
        return std::make_unique<UdpRecvComm>(std::move(*end), std::move(a.link));
      });
}

std::unique_ptr<Connector> UdpTransport::connect(const Address& address, uint64_t local_id) {
  const uint64_t id = reserveId(*engine_);
  return std::make_unique<OobConnector>(
      options_, oobAddressOf(address, "udp"), local_id, localBlob(*engine_, id, payload_bytes_).encode(),
      [engine = engine_, options = options_.udp, payload = payload_bytes_, line = line_bps_, id](
          OobLink link, const std::string& answer, std::unique_ptr<SendComm>* comm) {
        SetupBlob remote;
        MSC_RETURN_IF_ERROR(SetupBlob::decode(answer, &remote));
        UdpSenderSetup setup;
        setup.remote_connection = remote.connection;
        setup.peer = link.peer();
        setup.payload_bytes = std::min<size_t>(payload, remote.payload_bytes);
        setup.window_bytes = options.window_bytes;
        setup.line_bps = line;
        setup.rto_min = options.rto_min_us * kMicrosecond;
        setup.give_up_after = options.give_up_ms * kMillisecond;
        const UdpControlSetup control{options.congestion, line, setup.payload_bytes + udp_wire::kDataHeaderBytes,
                                      setup.window_bytes, options.target_delay_us * kMicrosecond};
        UdpEnd<UdpSender> end;
        end.engine = engine;
        end.ready = std::make_unique<ReadySignal>();
        end.half = std::make_unique<UdpSender>(setup, pathsTo(*engine, options, remote.endpointList()),
                                               makeUdpControl(control), *engine, end.ready->notifier());
        end.attachment = std::make_unique<UdpAttachment>(engine, id, end.half.get());
        *comm = std::make_unique<UdpSendComm>(std::move(end), std::move(link));
        return Status::ok();
      });
}

}  // namespace megascale::transport
