#include "bench/p2p_layers.h"

#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/config.h"
#include "common/crypto.h"
#include "transport/net_transport.h"
#include "transport/registry.h"

namespace megascale::bench {

namespace {

using nccl_abi::kSuccess;

// The bare transport's handle: the secret its connections prove and the listener's address.
struct TransportHandle {
  char secret[33];
  uint8_t address_size;
  uint8_t address[kP2pHandleBytes - 34];
};
static_assert(sizeof(TransportHandle) <= kP2pHandleBytes);

class TransportLayer : public P2pLayer {
 public:
  explicit TransportLayer(const std::string& bind_address) {
    options_ = transport::transportOptionsFromConfig();
    options_.bind_address = bind_address;
    name_ = transport::networkTransport(config::getString("MEGASCALE_TRANSPORT"));
    // The protocol the plugin runs (no eager copies where device memory may be received), so the two columns
    // compare the same transfers.
    options_.device_memory_receives =
        transport::mayReceiveIntoDeviceMemory(transport::createTransport(name_, options_)->properties());
    lanes_ = transport::createTransport(name_, options_)->properties().lanes;  // as the protocol above runs
  }
  std::string name() const override { return "transport"; }
  std::string description() const override {
    return "megascale " + name_ + " transport, " + (lanes_.empty() ? "" : lanes_ + ", ") + "on " + options_.bind_address;
  }
  void listen(uint8_t handle[kP2pHandleBytes]) override {
    uint8_t random[16];
    randomBytes(random, sizeof(random));
    const std::string secret = toHex(random, sizeof(random));
    transport::TransportOptions o = options_;
    o.secret = secret;
    listen_transport_ = transport::createTransport(name_, o);
    listener_ = listen_transport_->listen();
    const transport::Address& address = listener_->address();
    TransportHandle h{};
    if (address.size > sizeof(h.address)) throw std::runtime_error("transport: address longer than the handle");
    std::memcpy(h.secret, secret.c_str(), sizeof(h.secret));
    h.address_size = static_cast<uint8_t>(address.size);
    std::memcpy(h.address, address.bytes, address.size);
    std::memcpy(handle, &h, sizeof(h));
  }
  bool pollConnect(const uint8_t peer_handle[kP2pHandleBytes]) override {
    if (send_ != nullptr) return true;
    if (connector_ == nullptr) {
      TransportHandle h;
      std::memcpy(&h, peer_handle, sizeof(h));
      h.secret[32] = '\0';
      transport::TransportOptions o = options_;
      o.secret = h.secret;
      connect_transport_ = transport::createTransport(name_, o);
      transport::Address address;
      address.size = h.address_size;
      std::memcpy(address.bytes, h.address, h.address_size);
      connector_ = connect_transport_->connect(address, 0);
    }
    check(connector_->poll(&send_), "connect");
    return send_ != nullptr;
  }
  bool pollAccept() override {
    if (recv_ == nullptr) check(listener_->accept(&recv_), "accept");
    return recv_ != nullptr;
  }
  void* registerMemory(bool send_side, void* data, size_t size) override {
    auto* region = new transport::MemoryRegion;
    check((send_side ? connect_transport_ : listen_transport_)->registerMemory(data, size, transport::kHostPointer, region),
          "register memory");
    return region;
  }
  void deregisterMemory(bool send_side, void* region) override {
    auto* r = static_cast<transport::MemoryRegion*>(region);
    (send_side ? connect_transport_ : listen_transport_)->deregisterMemory(r);
    delete r;
  }
  void* isend(const void* data, size_t size, void* region) override {
    transport::Request* r = nullptr;
    check(send_->isend(data, size, 0, static_cast<transport::MemoryRegion*>(region), &r), "isend");
    return r;
  }
  void* irecv(void* data, size_t capacity, void* region) override {
    transport::Request* r = nullptr;
    const uint32_t tag = 0;
    const transport::MemoryRegion* regions[1] = {static_cast<transport::MemoryRegion*>(region)};
    check(recv_->irecv(1, &data, &capacity, &tag, regions, &r), "irecv");
    return r;
  }
  bool testSend(void* request, size_t* size) override {
    bool done = false;
    check(send_->test(static_cast<transport::Request*>(request), &done, size), "test send");
    return done;
  }
  bool testRecv(void* request, size_t* size) override {
    bool done = false;
    check(recv_->test(static_cast<transport::Request*>(request), &done, size), "test receive");
    return done;
  }
  void close() override {
    send_.reset();
    recv_.reset();
    connector_.reset();
    listener_.reset();
  }

 private:
  static void check(const Status& s, const char* operation) {
    if (!s.isOk()) throw std::runtime_error(std::string("transport ") + operation + ": " + s.message());
  }

  std::string name_;
  std::string lanes_;  // the transport's own words for its lanes
  transport::TransportOptions options_;
  std::unique_ptr<transport::Transport> listen_transport_, connect_transport_;
  std::unique_ptr<transport::Listener> listener_;
  std::unique_ptr<transport::Connector> connector_;
  std::unique_ptr<transport::SendComm> send_;
  std::unique_ptr<transport::RecvComm> recv_;
};

class PluginLayer : public P2pLayer {
 public:
  PluginLayer(const std::string& path, const std::string& version) : path_(path) {
    std::vector<nccl_plugin::PluginApi> apis = nccl_plugin::loadPlugin(path);
    if (apis.empty()) throw std::runtime_error(path + " exports no ncclNetPlugin_v8..v11");
    for (const auto& api : apis) {
      if (version.empty() || api.version == version) api_ = api;  // the newest comes last
    }
    if (api_.version.empty()) throw std::runtime_error(path + " does not export ncclNetPlugin_" + version);
    call(api_.init(), "init");
    int devices = 0;
    call(api_.devices(&devices), "devices");
    if (devices < 1) throw std::runtime_error("plugin " + path + " has no devices");
    call(api_.properties(0, &properties_), "getProperties");
  }
  ~PluginLayer() override { api_.finalize(); }
  std::string name() const override { return "plugin"; }
  std::string description() const override {
    return path_ + " (ncclNetPlugin_" + api_.version + " \"" + (api_.name ? api_.name : "?") + "\"), device 0: " +
           (properties_.name ? properties_.name : "?") + ", " + std::to_string(properties_.speed_mbps) + " Mb/s";
  }
  void listen(uint8_t handle[kP2pHandleBytes]) override { call(api_.listen(0, handle, &listen_), "listen"); }
  bool pollConnect(const uint8_t peer_handle[kP2pHandleBytes]) override {
    if (send_ == nullptr) {
      if (!handle_copied_) {  // NCCL keeps the handle between connect calls; the plugin may write into it
        std::memcpy(handle_, peer_handle, kP2pHandleBytes);
        handle_copied_ = true;
      }
      call(api_.connect(0, handle_, &send_), "connect");
    }
    return send_ != nullptr;
  }
  bool pollAccept() override {
    if (recv_ == nullptr) call(api_.accept(listen_, &recv_), "accept");
    return recv_ != nullptr;
  }
  void* registerMemory(bool send_side, void* data, size_t size) override {
    void* region = nullptr;
    call(api_.regMr(send_side ? send_ : recv_, data, size, nccl_abi::kPtrHost, &region), "regMr");
    return region;
  }
  void deregisterMemory(bool send_side, void* region) override {
    call(api_.deregMr(send_side ? send_ : recv_, region), "deregMr");
  }
  void* isend(const void* data, size_t size, void* region) override {
    void* request = nullptr;
    call(api_.isend(send_, const_cast<void*>(data), size, 0, region, &request), "isend");
    return request;
  }
  void* irecv(void* data, size_t capacity, void* region) override {
    void* request = nullptr;
    int tag = 0;
    call(api_.irecv(recv_, 1, &data, &capacity, &tag, &region, &request), "irecv");
    return request;
  }
  bool testSend(void* request, size_t* size) override { return test(request, size); }
  bool testRecv(void* request, size_t* size) override { return test(request, size); }
  void close() override {
    if (send_ != nullptr) api_.closeSend(send_);
    if (recv_ != nullptr) api_.closeRecv(recv_);
    if (listen_ != nullptr) api_.closeListen(listen_);
    send_ = recv_ = listen_ = nullptr;
  }

 private:
  void call(nccl_abi::Result r, const char* operation) const {
    if (r != kSuccess) throw std::runtime_error("plugin " + api_.version + " " + operation + " returned " + std::to_string(r));
  }
  bool test(void* request, size_t* size) {
    int done = 0, bytes = 0;
    call(api_.test(request, &done, &bytes), "test");
    if (done && size != nullptr) *size = static_cast<size_t>(bytes);
    return done != 0;
  }

  std::string path_;
  nccl_plugin::PluginApi api_;
  nccl_plugin::NetProperties properties_;
  uint8_t handle_[kP2pHandleBytes] = {};
  bool handle_copied_ = false;
  void *listen_ = nullptr, *send_ = nullptr, *recv_ = nullptr;
};

}  // namespace

std::unique_ptr<P2pLayer> makeTransportLayer(const std::string& bind_address) {
  return std::make_unique<TransportLayer>(bind_address);
}

std::unique_ptr<P2pLayer> makePluginLayer(const std::string& path, const std::string& version) {
  return std::make_unique<PluginLayer>(path, version);
}

}  // namespace megascale::bench
