#include "transport/oob_endpoints.h"

namespace megascale::transport {

OobListener::OobListener(const TransportOptions& options, const std::string& owner, OobServer::Answer answer,
                         Make make)
    : server_(options, owner), address_(Address::fromString(owner + ":" + formatAddress(server_.bound()))),
      answer_(std::move(answer)), make_(std::move(make)) {}

Status OobListener::accept(std::unique_ptr<RecvComm>* comm) {
  std::vector<OobAccepted> accepted;
  server_.poll(answer_, &accepted);
  for (OobAccepted& a : accepted) {
    try {
      ready_.push_back(make_(a));
    } catch (const Error& e) {
      return Status(e.code(), e.what());
    }
  }
  if (!ready_.empty()) {
    *comm = std::move(ready_.front());
    ready_.pop_front();
  }
  return Status::ok();
}

OobConnector::OobConnector(const TransportOptions& options, const sockaddr_in& address, uint64_t local_id,
                           std::string blob, Finish finish)
    : dial_(options, address, local_id, std::move(blob)), finish_(std::move(finish)) {}

Status OobConnector::poll(std::unique_ptr<SendComm>* comm) {
  bool done = false;
  MSC_RETURN_IF_ERROR(dial_.poll(&done));
  if (!done) return Status::ok();
  try {
    return finish_(dial_.release(), dial_.answer(), comm);
  } catch (const Error& e) {
    return Status(e.code(), e.what());
  }
}

sockaddr_in oobAddressOf(const Address& address, const std::string& owner) {
  const std::string text = address.asString(), prefix = owner + ":";
  if (text.rfind(prefix, 0) != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                owner + " connect: '" + text + "' is not an address of the " + owner + " transport");
  }
  return parseHostPort(text.substr(prefix.size()));
}

}  // namespace megascale::transport
