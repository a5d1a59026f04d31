// One end of the link-flap test (flap_test.cc), run inside an emulated host: the ibverbs transport with the
// knobs of its environment (MEGASCALE_IB_*), one message of a checked pattern. It prints what the test waits
// for: "address <a>" (receiver), "posted", then "result ok" or "result error <code> <message>".
//   flap_peer recv BYTES | flap_peer send BYTES ADDRESS
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/socket.h"
#include "transport/net_transport.h"
#include "transport/registry.h"

using namespace megascale;
using namespace megascale::transport;

namespace {

uint8_t patternByte(size_t i) { return static_cast<uint8_t>(i * 131 + (i >> 12)); }

int report(const Status& s) {
  if (s.isOk()) {
    std::printf("result ok\n");
  } else {
    std::printf("result error %s %s\n", errorCodeName(s.code()), s.message().c_str());
  }
  std::fflush(stdout);
  return s.isOk() ? 0 : 1;
}

template <typename Poll>
Status until(Poll poll, Deadline deadline) {
  while (true) {
    bool done = false;
    MSC_RETURN_IF_ERROR(poll(&done));
    if (done) return Status::ok();
    if (Clock::now() > deadline) return Status(ErrorCode::kTimeout, "flap_peer: no end within its deadline");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: flap_peer recv BYTES | flap_peer send BYTES ADDRESS\n");
    return 2;
  }
  const std::string mode = argv[1];
  const size_t bytes = std::strtoull(argv[2], nullptr, 10);
  TransportOptions options = transportOptionsFromConfig();
  options.secret = "flap-test";
  const Deadline deadline = deadlineAfter(std::chrono::seconds(120));
  try {
    auto transport = createTransport("ibverbs", options);
    if (mode == "recv") {
      auto listener = transport->listen();
      std::printf("address %s\n", listener->address().asString().c_str());
      std::fflush(stdout);
      std::unique_ptr<RecvComm> comm;
      Status s = until([&](bool* done) {
        MSC_RETURN_IF_ERROR(listener->accept(&comm));
        *done = comm != nullptr;
        return Status::ok();
      }, deadline);
      if (!s.isOk()) return report(s);
      std::vector<uint8_t> buffer(bytes, 0);
      void* data = buffer.data();
      uint32_t tag = 1;
      Request* request = nullptr;
      s = comm->irecv(1, &data, &bytes, &tag, nullptr, &request);
      if (!s.isOk()) return report(s);
      std::printf("posted\n");
      std::fflush(stdout);
      size_t received = 0;
      s = until([&](bool* done) { return comm->test(request, done, &received); }, deadline);
      if (s.isOk()) {
        for (size_t i = 0; i < bytes && s.isOk(); ++i) {
          if (buffer[i] != patternByte(i)) s = Status(ErrorCode::kInternal, "byte " + std::to_string(i) + " differs");
        }
        if (received != bytes) s = Status(ErrorCode::kInternal, "received " + std::to_string(received) + " bytes");
      }
      return report(s);
    }
    auto connector = transport->connect(Address::fromString(argv[3]), 1);
    std::unique_ptr<SendComm> comm;
    Status s = until([&](bool* done) {
      MSC_RETURN_IF_ERROR(connector->poll(&comm));
      *done = comm != nullptr;
      return Status::ok();
    }, deadline);
    if (!s.isOk()) return report(s);
    std::vector<uint8_t> buffer(bytes);
    for (size_t i = 0; i < bytes; ++i) buffer[i] = patternByte(i);
    Request* request = nullptr;
    s = comm->isend(buffer.data(), bytes, 1, nullptr, &request);
    if (!s.isOk()) return report(s);
    std::printf("posted\n");
    std::fflush(stdout);
    size_t sent = 0;
    return report(until([&](bool* done) { return comm->test(request, done, &sent); }, deadline));
  } catch (const Error& e) {
    return report(Status(e.code(), e.what()));
  }
}
