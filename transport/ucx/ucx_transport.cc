#include "transport/ucx/ucx_transport.h"

#include <cstring>
#include <deque>
#include <vector>

#include "transport/oob_link.h"
#include "transport/ucx/ucx_comm.h"
#include "transport/ucx/ucx_endpoint.h"

namespace megascale::transport {

namespace {

constexpr char kAddressPrefix[] = "ucx:";

// The listener's answer to a client: the connection id to tag its messages with, then our worker's address.
std::string encodeAnswer(uint32_t connection_id, const std::string& worker_address) {
  std::string answer(sizeof(connection_id), '\0');
  std::memcpy(answer.data(), &connection_id, sizeof(connection_id));
  return answer + worker_address;
}

class UcxListener : public Listener {
 public:
  UcxListener(std::shared_ptr<UcxWorker> worker, const TransportOptions& options)
      : worker_(std::move(worker)), server_(options, "ucx"),
        address_(Address::fromString(kAddressPrefix + formatAddress(server_.bound()))) {}

  const Address& address() const override { return address_; }

  Status accept(std::unique_ptr<RecvComm>* comm) override {
    std::vector<OobAccepted> accepted;
    server_.poll(
        [this](const OobRequest&, std::string* reply, std::any* state) {
          std::lock_guard<SpinLock> guard(worker_->lock());
          const uint32_t id = worker_->nextConnectionId();
          *reply = encodeAnswer(id, worker_->address());
          *state = id;
          return Status::ok();
        },
        &accepted);
    for (OobAccepted& a : accepted) {
      ready_.push_back(std::make_unique<UcxRecvComm>(worker_, std::any_cast<uint32_t>(a.state), std::move(a.link)));
    }
    if (!ready_.empty()) {
      *comm = std::move(ready_.front());
      ready_.pop_front();
    }
    return Status::ok();
  }

  bool appendReadiness(std::vector<pollfd>& fds) const override { return server_.appendReadiness(fds); }

 private:
  std::shared_ptr<UcxWorker> worker_;
  OobServer server_;
  Address address_;
  std::deque<std::unique_ptr<RecvComm>> ready_;
};

class UcxConnector : public Connector {
 public:
  UcxConnector(std::shared_ptr<UcxWorker> worker, const TransportOptions& options, const sockaddr_in& address,
               uint64_t local_id)
      : worker_(std::move(worker)), dial_(options, address, local_id, std::string()) {}

  Status poll(std::unique_ptr<SendComm>* comm) override {
    bool done = false;
    MSC_RETURN_IF_ERROR(dial_.poll(&done));
    if (!done) return Status::ok();
    OobLink link = dial_.release();
    const std::string& answer = dial_.answer();
    uint32_t connection_id = 0;
    if (answer.size() <= sizeof(connection_id)) {
      return Status(ErrorCode::kPeerLost, "ucx: " + link.peer() + " answered with " + std::to_string(answer.size()) +
                                              " bytes, too few for a connection id and a worker address");
    }
    std::memcpy(&connection_id, answer.data(), sizeof(connection_id));
    std::unique_ptr<UcxEndpoint> endpoint;
    try {
      std::lock_guard<SpinLock> guard(worker_->lock());
      endpoint = std::make_unique<UcxEndpoint>(worker_, answer.substr(sizeof(connection_id)), link.peer());
    } catch (const Error& e) {
      return Status(e.code(), e.what());
    }
    *comm = std::make_unique<UcxSendComm>(std::move(endpoint), connection_id, std::move(link));
    return Status::ok();
  }

  bool appendReadiness(std::vector<pollfd>& fds) const override { return dial_.appendReadiness(fds); }

 private:
  std::shared_ptr<UcxWorker> worker_;
  OobDial dial_;
};

}  // namespace

UcxTransport::UcxTransport(const TransportOptions& options)
    : options_(options), worker_(UcxWorker::shared()) {
  properties_.name = "ucx";
  properties_.speed_gbps = 10;  // UCX does not say; its tcp and shared memory paths run near this here
  properties_.latency_us = 5;
  properties_.max_recvs = kMaxRecvs;
}

std::unique_ptr<Listener> UcxTransport::listen() { return std::make_unique<UcxListener>(worker_, options_); }

std::unique_ptr<Connector> UcxTransport::connect(const Address& address, uint64_t local_id) {
  std::string text = address.asString();
  if (text.rfind(kAddressPrefix, 0) != 0) {
    throw Error(ErrorCode::kInvalidArgument, "ucx connect: '" + text + "' is not a ucx transport address");
  }
  return std::make_unique<UcxConnector>(worker_, options_, parseHostPort(text.substr(sizeof(kAddressPrefix) - 1)),
                                        local_id);
}

}  // namespace megascale::transport
