#include "transport/ucx/ucx_transport.h"

#include <any>
#include <cstring>

#include "transport/oob_endpoints.h"
#include "transport/ucx/ucx_comm.h"
#include "transport/ucx/ucx_endpoint.h"

namespace megascale::transport {

namespace {

// The listener's answer to a client: the connection id to tag its messages with, then our worker's address.
std::string encodeAnswer(uint32_t connection_id, const std::string& worker_address) {
  std::string answer(sizeof(connection_id), '\0');
  std::memcpy(answer.data(), &connection_id, sizeof(connection_id));
  return answer + worker_address;
}

// The client's answer: connect an endpoint to the listener's worker and tag messages with its connection id.
Status finishConnect(const std::shared_ptr<UcxWorker>& worker, OobLink link, const std::string& answer,
                     std::unique_ptr<SendComm>* comm) {
  uint32_t connection_id = 0;
  if (answer.size() <= sizeof(connection_id)) {
    return Status(ErrorCode::kPeerLost, "ucx: " + link.peer() + " answered with " + std::to_string(answer.size()) +
                                            " bytes, too few for a connection id and a worker address");
  }
  std::memcpy(&connection_id, answer.data(), sizeof(connection_id));
  std::unique_ptr<UcxEndpoint> endpoint;
  {
    std::lock_guard<SpinLock> guard(worker->lock());
    endpoint = std::make_unique<UcxEndpoint>(worker, answer.substr(sizeof(connection_id)), link.peer());
  }
  *comm = std::make_unique<UcxSendComm>(std::move(endpoint), connection_id, std::move(link));
  return Status::ok();
}

}  // namespace

UcxTransport::UcxTransport(const TransportOptions& options)
    : options_(options), worker_(UcxWorker::shared()) {
  properties_.name = "ucx";
  properties_.speed_gbps = 10;  // UCX does not say; its tcp and shared memory paths run near this here
  properties_.latency_us = 5;
  properties_.max_recvs = kMaxRecvs;
}

std::unique_ptr<Listener> UcxTransport::listen() {
  std::shared_ptr<UcxWorker> worker = worker_;
  return std::make_unique<OobListener>(
      options_, "ucx",
      [worker](const OobRequest&, std::string* reply, std::any* state) {
        std::lock_guard<SpinLock> guard(worker->lock());
        const uint32_t id = worker->nextConnectionId();
        *reply = encodeAnswer(id, worker->address());
        *state = id;
        return Status::ok();
      },
      [worker](OobAccepted& a) {
        return std::make_unique<UcxRecvComm>(worker, std::any_cast<uint32_t>(a.state), std::move(a.link));
      });
}

std::unique_ptr<Connector> UcxTransport::connect(const Address& address, uint64_t local_id) {
  std::shared_ptr<UcxWorker> worker = worker_;
  return std::make_unique<OobConnector>(options_, oobAddressOf(address, "ucx"), local_id, std::string(),
                                        [worker](OobLink link, const std::string& answer, std::unique_ptr<SendComm>* comm) {
                                          return finishConnect(worker, std::move(link), answer, comm);
                                        });
}

}  // namespace megascale::transport
