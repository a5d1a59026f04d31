// The listener and connector of a transport whose setup is one exchange over the setup socket (oob_link.h):
// ucx, ibverbs and udp differ only in the blobs they swap and the comms they make of them.
#pragma once

#include <netinet/in.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/oob_link.h"
#include "transport/transport.h"

namespace megascale::transport {

/// Clients arrive through an OobServer: `answer` answers each one (keeping any state of its connection), `make`
/// turns each client whose answer went out into its receive comm. The address is "<owner>:host:port".
class OobListener : public Listener {
 public:
  using Make = std::function<std::unique_ptr<RecvComm>(OobAccepted& accepted)>;
  /// Throws Error when it cannot listen.
  OobListener(const TransportOptions& options, const std::string& owner, OobServer::Answer answer, Make make);
  const Address& address() const override { return address_; }
  /// A comm `make` throws for is the error returned (its client is dropped).
  Status accept(std::unique_ptr<RecvComm>* comm) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override { return server_.appendReadiness(fds); }

 private:
  OobServer server_;
  Address address_;
  OobServer::Answer answer_;
  Make make_;
  std::deque<std::unique_ptr<RecvComm>> ready_;
};

/// The client's side: dials, sends `blob`, and once the answer is in, `finish` makes the send comm of the link
/// and the answer (an Error it throws is returned).
class OobConnector : public Connector {
 public:
  using Finish = std::function<Status(OobLink link, const std::string& answer, std::unique_ptr<SendComm>* comm)>;
  OobConnector(const TransportOptions& options, const sockaddr_in& address, uint64_t local_id, std::string blob,
               Finish finish);
  Status poll(std::unique_ptr<SendComm>* comm) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override { return dial_.appendReadiness(fds); }

 private:
  OobDial dial_;
  Finish finish_;
};

/// The setup socket's address in an address of `owner`'s ("<owner>:host:port"); throws Error(kInvalidArgument)
/// for an address of another transport.
sockaddr_in oobAddressOf(const Address& address, const std::string& owner);

}  // namespace megascale::transport
