#include "nccl_plugin/plugin.h"

#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/crypto.h"
#include "common/status.h"
#include "nccl_plugin/boundary.h"
#include "topology/net_interfaces.h"
#include "transport/net_transport.h"
#include "transport/registry.h"
#include "transport/transport.h"

namespace megascale::nccl_plugin {

namespace {

using nccl_abi::kLogInfo;
using nccl_abi::kLogWarn;

// The handle NCCL carries from listen() to the peer's connect(): the listener's address, the secret its
// connections must prove, and (on the connecting side, between connect() calls) the pending connection.
struct Handle {
  uint32_t magic;
  uint32_t version;
  char secret[33];  // 32 hex digits
  uint8_t address_size;
  uint8_t address[64];
  struct PendingConnect* pending;
};
static_assert(sizeof(Handle) <= nccl_abi::kHandleMaxBytes, "the handle must fit NCCL's 128 bytes");
constexpr uint32_t kHandleMagic = 0x4d534e31;  // "MSN1"

enum class Kind : uint32_t { kListen = 0x4c495354, kSend = 0x53454e44, kRecv = 0x52454356, kRequest = 0x52455153 };

// A request handed to NCCL: the transport's request and the comm that drives it. Each comm owns a fixed
// pool of them (as many as the transport takes in flight), so closing a comm with requests in flight frees
// everything and posting allocates nothing.
struct Request {
  Kind kind = Kind::kRequest;
  bool in_use = false;
  struct SendComm* send = nullptr;  // exactly one of send / recv
  struct RecvComm* recv = nullptr;
  transport::Request* request = nullptr;
  int n = 1;
};

class RequestPool {
 public:
  Request* take() {
    for (Request& r : requests_) {
      if (!r.in_use) {
        r.in_use = true;
        return &r;
      }
    }
    return nullptr;
  }
  static void release(Request* r) { r->in_use = false; }

 private:
  Request requests_[transport::kMaxRequests];
};

// Every comm knows its device: registrations belong to the device's NIC (ibverbs: its protection domain).
struct ListenComm {
  Kind kind = Kind::kListen;
  int dev = 0;
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<transport::Listener> listener;
};
struct SendComm {
  Kind kind = Kind::kSend;
  int dev = 0;
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<transport::SendComm> comm;
  RequestPool requests;
};
struct RecvComm {
  Kind kind = Kind::kRecv;
  int dev = 0;
  std::unique_ptr<transport::RecvComm> comm;
  RequestPool requests;
};
struct PendingConnect {
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<transport::Connector> connector;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  nccl_abi::Logger logger = nullptr;
  std::string transport_name;           // MEGASCALE_TRANSPORT's network transport, resolved at init
  transport::TransportOptions options;  // the transport knobs, read and checked at init
  std::vector<topology::NetInterface> interfaces;
  std::deque<std::string> names, pci_paths;  // storage for the char* in properties (stable as devices are added)
  std::vector<int> ports;                      // each device's port on its NIC (0: none)
  // Each device's NICs by physical device number: {dev} for the host's own, several for a virtual device
  // (makeVirtualDevice), which follow the physical ones.
  std::vector<std::vector<int>> members;
  size_t physical = 0;
  int ptr_support = nccl_abi::kPtrHost;
  // The transport drives NICs of its own, one per device (ibverbs: an active port each, by ib.ports);
  // else every device is an interface the host's routes reach.
  bool device_per_nic = false;
  // Register memory for the comms (made at init): registrations belong to the device, not to a comm (ibverbs:
  // one protection domain per port), and NCCL may close a listener before its comms register. One per device
  // where the transport drives NICs, else one for all.
  std::vector<std::unique_ptr<transport::Transport>> registrars;
};

// A registration handed to NCCL: the transport's region and the device whose registrar made it.
struct Registration {
  transport::MemoryRegion region;
  int dev = 0;
};

const transport::MemoryRegion* regionOf(void* mhandle) {
  return mhandle != nullptr ? &static_cast<Registration*>(mhandle)->region : nullptr;
}

State& state() {
  static State s;
  return s;
}

void log(nccl_abi::LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void log(nccl_abi::LogLevel level, const char* fmt, ...) {
  char message[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  nccl_abi::Logger logger = state().logger;
  if (logger != nullptr) {
    logger(level, nccl_abi::kLogSubsystemNet | nccl_abi::kLogSubsystemInit, __FILE__, __LINE__, "NET/megascale: %s",
           message);
  } else if (level == kLogWarn) {
    std::fprintf(stderr, "NET/megascale: %s\n", message);
  }
}

Result fail(const char* operation, const Status& status) {
  log(kLogWarn, "%s failed: %s", operation, status.message().c_str());
  return resultFor(status.code());
}

// Every entry point runs inside this: an exception (a failed allocation, a setup error) becomes a code.
template <typename Body>
Result guarded(const char* operation, Body&& body) {
  return callGuarded(operation, body,
                     [](const char* op, const char* message) { log(kLogWarn, "%s failed: %s", op, message); });
}

Result misuse(const char* fmt, const char* what) {
  log(kLogWarn, fmt, what);
  return nccl_abi::kInternalError;
}

transport::TransportOptions optionsFor(const Context* context, int dev, const std::string& secret) {
  transport::TransportOptions o = state().options;
  o.secret = secret;
  o.bind_address = state().interfaces[static_cast<size_t>(dev)].ipv4;
  o.traffic_class = context != nullptr ? context->traffic_class : nccl_abi::kTrafficClassUndefined;
  if (state().device_per_nic) o.ib.ports = state().members[static_cast<size_t>(dev)];
  return o;
}

// A device transport's NIC as the plugin's one device. Its setup socket binds to the NIC's own address (RoCE:
// the IPv4 in its GID), else to the first interface; a NIC without a PCI path in sysfs (the emulated device)
// takes its interface's.
topology::NetInterface nicAsInterface(const transport::Properties& props,
                                      const std::vector<topology::NetInterface>& interfaces) {
  topology::NetInterface nic;
  for (const auto& i : interfaces) {
    if (i.ipv4 == props.nic.ipv4) nic = i;
  }
  if (nic.name.empty() && !interfaces.empty()) nic = interfaces.front();
  if (!props.nic.ipv4.empty()) nic.ipv4 = props.nic.ipv4;
  nic.name = props.nic.name;
  if (!props.nic.pci_path.empty()) nic.pci_path = props.nic.pci_path;
  if (props.nic.guid != 0) nic.guid = props.nic.guid;
  if (props.speed_gbps > 0) nic.speed_mbps = static_cast<int>(props.speed_gbps * 1000);
  return nic;
}

bool validDevice(int dev) {
  std::lock_guard lock(state().mutex);
  return state().initialized && dev >= 0 && dev < static_cast<int>(state().interfaces.size());
}

// Hands the transport's request to NCCL inside `wrapper` (taken from the comm's pool), which goes back to the
// pool when the transport took nothing; `sizes`: how many sizes test() reports for it.
template <typename Post>
Result wrapRequest(const char* operation, Request* wrapper, SendComm* send, RecvComm* recv, int sizes, void** request,
                   Post&& post) {
  transport::Request* r = nullptr;
  Status s = post(&r);
  if (!s.isOk() || r == nullptr) RequestPool::release(wrapper);
  if (!s.isOk()) return fail(operation, s);
  if (r != nullptr) {
    wrapper->send = send;
    wrapper->recv = recv;
    wrapper->request = r;
    wrapper->n = sizes;
    *request = wrapper;
  }
  return nccl_abi::kSuccess;
}

// NCCL's memory handles as the transport's regions (null handles stay null).
void regionsOf(int n, void** mhandles, const transport::MemoryRegion** regions) {
  for (int i = 0; i < n; ++i) {
    regions[i] = mhandles != nullptr ? regionOf(mhandles[i]) : nullptr;
  }
}

template <typename T>
T* as(void* pointer, Kind kind) {
  T* object = static_cast<T*>(pointer);
  return object != nullptr && object->kind == kind ? object : nullptr;
}

}  // namespace

Result init(nccl_abi::Logger logger) {
  return guarded("init", [&]() -> Result {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (logger != nullptr) s.logger = logger;
    if (s.initialized) return nccl_abi::kSuccess;
    s.registrars.clear();  // a failed init before this one may have left some
    s.names.clear();
    s.pci_paths.clear();
    s.ports.clear();
    s.members.clear();
    s.transport_name = transport::networkTransport(config::getString("MEGASCALE_TRANSPORT"));
    s.options = transport::transportOptionsFromConfig();  // bad knobs fail init, not the first connection
    // The transport once per device, now: a missing device (ibverbs without an active RDMA port) fails init,
    // saying so.
    const transport::TransportInfo* row = transport::findTransport(s.transport_name);
    s.device_per_nic = row != nullptr && row->nic_count != nullptr;
    const int nics = s.device_per_nic ? row->nic_count(s.options) : 1;
    // No NIC found: one transport all the same, whose error says what is missing.
    for (int dev = 0; dev < std::max(nics, 1); ++dev) {
      transport::TransportOptions o = s.options;
      if (s.device_per_nic && nics > 0) o.ib.ports = {dev};
      s.registrars.push_back(transport::createTransport(s.transport_name, o));
    }
    s.device_per_nic = s.device_per_nic && nics > 0;
    const transport::Properties& props = s.registrars.front()->properties();
    s.ptr_support = nccl_abi::kPtrHost;
    if (props.pointer_kinds & transport::kDevicePointer) {
      s.ptr_support |= nccl_abi::kPtrCuda | (props.dma_buf ? nccl_abi::kPtrDmaBuf : 0);
    }
    // Where device memory can be registered, no receive may be filled by a CPU copy (ibverbs' eager path).
    s.options.device_memory_receives = transport::mayReceiveIntoDeviceMemory(props);
    const std::string spec = topology::configuredInterfaceSpec();
    s.interfaces = topology::discoverInterfaces(spec);
    if (s.device_per_nic) {
      const std::vector<topology::NetInterface> routes = s.interfaces;
      s.interfaces.clear();
      for (const auto& registrar : s.registrars) s.interfaces.push_back(nicAsInterface(registrar->properties(), routes));
    }
    if (s.interfaces.empty()) {
      log(kLogWarn, "no usable network interface (up, with IPv4%s%s)", spec.empty() ? "" : ", matching ", spec.c_str());
      return nccl_abi::kSystemError;
    }
    log(kLogInfo, "transport %s over %zu device(s)%s", s.transport_name.c_str(), s.interfaces.size(),
        s.ptr_support & nccl_abi::kPtrCuda ? ", GPU memory by dma-buf" : "");
    for (size_t dev = 0; dev < s.interfaces.size(); ++dev) {
      const topology::NetInterface& nic = s.interfaces[dev];
      s.names.push_back(nic.name);
      s.pci_paths.push_back(nic.pci_path);
      s.ports.push_back(s.device_per_nic ? s.registrars[dev]->properties().nic.port : 0);
      s.members.push_back({static_cast<int>(dev)});
      log(kLogInfo, "device %zu: %s%s %s, %d Mb/s, NUMA node %d%s%s (%s)", dev, nic.name.c_str(),
          s.ports.back() > 0 ? (":" + std::to_string(s.ports.back())).c_str() : "", nic.ipv4.c_str(), nic.speed_mbps,
          nic.numa_node, nic.pci_path.empty() ? "" : ", ", nic.pci_path.c_str(),
          nic.locality_source.empty() ? "virtual" : nic.locality_source.c_str());
    }
    s.physical = s.interfaces.size();
    s.initialized = true;
    return nccl_abi::kSuccess;
  });
}

Result makeVirtualDevice(int* d, nccl_abi::VirtualDeviceProps* props) {
  return guarded("makeVDevice", [&]() -> Result {
    if (d == nullptr || props == nullptr) return misuse("makeVDevice: %s", "null device or properties");
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (!s.initialized) return misuse("makeVDevice: %s", "called before init");
    std::string list;
    for (int i = 0; i < std::clamp(props->ndevs, 0, nccl_abi::kMaxDevsPerNic); ++i) {
      list += (list.empty() ? "" : ",") + std::to_string(props->devs[i]);
    }
    if (!s.device_per_nic) {
      log(kLogWarn, "makeVDevice {%s}: transport %s has no NICs of its own to merge (MEGASCALE_TRANSPORT=ibverbs has)",
          list.c_str(), s.transport_name.c_str());
      return nccl_abi::kInvalidUsage;
    }
    std::vector<int> members;
    bool valid = props->ndevs >= 1 && props->ndevs <= nccl_abi::kMaxDevsPerNic;
    for (int i = 0; valid && i < props->ndevs; ++i) {
      const int dev = props->devs[i];
      valid = dev >= 0 && static_cast<size_t>(dev) < s.physical &&
              std::find(members.begin(), members.end(), dev) == members.end();
      members.push_back(dev);
    }
    if (!valid) {
      log(kLogWarn, "makeVDevice {%s}: 1 to %d distinct physical devices (0..%zu) merge into a virtual one",
          list.c_str(), nccl_abi::kMaxDevsPerNic, s.physical - 1);
      return nccl_abi::kInvalidArgument;
    }
    // The same set again is the device made before; one device is itself.
    for (size_t dev = 0; dev < s.members.size(); ++dev) {
      if (s.members[dev] == members) {
        *d = static_cast<int>(dev);
        return nccl_abi::kSuccess;
      }
    }
    transport::TransportOptions o = s.options;
    o.ib.ports = members;
    s.registrars.push_back(transport::createTransport(s.transport_name, o));
    topology::NetInterface merged = s.interfaces[static_cast<size_t>(members[0])];
    std::string name;
    merged.speed_mbps = 0;
    for (int dev : members) {
      const topology::NetInterface& nic = s.interfaces[static_cast<size_t>(dev)];
      name += (name.empty() ? "" : "+") + nic.name;
      merged.speed_mbps += nic.speed_mbps;
    }
    merged.name = name;
    s.interfaces.push_back(merged);
    s.names.push_back(name);
    s.pci_paths.push_back(s.pci_paths[static_cast<size_t>(members[0])]);
    s.ports.push_back(s.ports[static_cast<size_t>(members[0])]);
    s.members.push_back(members);
    *d = static_cast<int>(s.interfaces.size() - 1);
    log(kLogInfo, "device %d: virtual, %s (devices %s), %d Mb/s", *d, name.c_str(), list.c_str(), merged.speed_mbps);
    return nccl_abi::kSuccess;
  });
}

Result devices(int* count) {
  return guarded("devices", [&]() -> Result {
    if (count == nullptr) return misuse("devices: %s", "null count");
    std::lock_guard lock(state().mutex);
    if (!state().initialized) return misuse("devices: %s", "called before init");
    *count = static_cast<int>(state().interfaces.size());
    return nccl_abi::kSuccess;
  });
}

Result properties(int dev, DeviceProperties* out) {
  return guarded("getProperties", [&]() -> Result {
    if (out == nullptr || !validDevice(dev)) return misuse("getProperties: %s", "bad device or null properties");
    State& s = state();
    std::lock_guard lock(s.mutex);
    const auto i = static_cast<size_t>(dev);
    out->name = s.names[i].data();
    out->pci_path = s.pci_paths[i].empty() ? nullptr : s.pci_paths[i].data();
    out->guid = s.interfaces[i].guid != 0 ? s.interfaces[i].guid : static_cast<uint64_t>(dev);
    out->port = s.ports[i];
    out->speed_mbps = s.interfaces[i].speed_mbps > 0 ? s.interfaces[i].speed_mbps : 10000;
    out->ndevs = static_cast<int>(s.members[i].size());  // {dev} for every device but a virtual one
    for (int k = 0; k < out->ndevs; ++k) out->devs[k] = s.members[i][static_cast<size_t>(k)];
    out->max_recvs = transport::kMaxRecvs;
    out->ptr_support = s.ptr_support;
    out->max_p2p_bytes = size_t{1} << 40;
    out->max_coll_bytes = size_t{512} << 20;
    return nccl_abi::kSuccess;
  });
}

Result listen(const Context* context, int dev, void* handle, void** listen_comm) {
  return guarded("listen", [&]() -> Result {
    if (handle == nullptr || listen_comm == nullptr) return misuse("listen: %s", "null handle or comm");
    if (!validDevice(dev)) return misuse("listen: %s", "no such device (or init not called)");
    uint8_t random[16];
    randomBytes(random, sizeof(random));
    const std::string secret = toHex(random, sizeof(random));
    auto comm = std::make_unique<ListenComm>();
    comm->dev = dev;
    comm->transport = transport::createTransport(state().transport_name, optionsFor(context, dev, secret));
    comm->listener = comm->transport->listen();
    const transport::Address& address = comm->listener->address();
    Handle h{};
    if (address.size > sizeof(h.address)) return misuse("listen: %s", "transport address longer than the handle");
    h.magic = kHandleMagic;
    h.version = 1;
    std::memcpy(h.secret, secret.c_str(), 33);
    h.address_size = static_cast<uint8_t>(address.size);
    std::memcpy(h.address, address.bytes, address.size);
    std::memcpy(handle, &h, sizeof(h));
    *listen_comm = comm.release();
    return nccl_abi::kSuccess;
  });
}

Result connect(const Context* context, int dev, void* handle, void** send_comm) {
  return guarded("connect", [&]() -> Result {
    if (handle == nullptr || send_comm == nullptr) return misuse("connect: %s", "null handle or comm");
    if (!validDevice(dev)) return misuse("connect: %s", "no such device (or init not called)");
    *send_comm = nullptr;
    Handle h;
    std::memcpy(&h, handle, sizeof(h));
    if (h.magic != kHandleMagic || h.address_size > sizeof(h.address) || h.secret[32] != '\0') {
      return misuse("connect: %s", "the handle is not one our listen() made");
    }
    if (h.pending == nullptr) {
      auto pending = std::make_unique<PendingConnect>();
      pending->transport = transport::createTransport(state().transport_name, optionsFor(context, dev, h.secret));
      transport::Address address;
      address.size = h.address_size;
      std::memcpy(address.bytes, h.address, h.address_size);
      pending->connector = pending->transport->connect(address, 0);
      h.pending = pending.release();
      std::memcpy(handle, &h, sizeof(h));
    }
    std::unique_ptr<transport::SendComm> comm;
    Status s = h.pending->connector->poll(&comm);
    if (!s.isOk() || comm != nullptr) {
      std::unique_ptr<PendingConnect> pending(h.pending);
      h.pending = nullptr;
      std::memcpy(handle, &h, sizeof(h));
      if (!s.isOk()) return fail("connect", s);
      auto out = std::make_unique<SendComm>();
      out->dev = dev;
      out->transport = std::move(pending->transport);
      out->comm = std::move(comm);
      *send_comm = out.release();
    }
    return nccl_abi::kSuccess;
  });
}

Result accept(void* listen_comm, void** recv_comm) {
  return guarded("accept", [&]() -> Result {
    ListenComm* l = as<ListenComm>(listen_comm, Kind::kListen);
    if (l == nullptr || recv_comm == nullptr) return misuse("accept: %s", "not a listen comm");
    *recv_comm = nullptr;
    std::unique_ptr<transport::RecvComm> comm;
    Status s = l->listener->accept(&comm);
    if (!s.isOk()) return fail("accept", s);
    if (comm != nullptr) {
      auto out = std::make_unique<RecvComm>();
      out->dev = l->dev;
      out->comm = std::move(comm);
      *recv_comm = out.release();
    }
    return nccl_abi::kSuccess;
  });
}

// The device a comm NCCL registers through belongs to (-1: not one of our comms).
int deviceOf(void* comm) {
  if (auto* c = as<SendComm>(comm, Kind::kSend)) return c->dev;
  if (auto* c = as<RecvComm>(comm, Kind::kRecv)) return c->dev;
  if (auto* c = as<ListenComm>(comm, Kind::kListen)) return c->dev;
  return -1;
}

// The registrar of device `dev` (lock held): its own where the transport drives NICs, else the one for all.
transport::Transport* registrarOf(State& st, int dev) {
  const auto i = static_cast<size_t>(st.device_per_nic ? dev : 0);
  return dev >= 0 && i < st.registrars.size() ? st.registrars[i].get() : nullptr;
}

// Registers through the registrar of the comm's device (registrations belong to the device, not to a comm).
template <typename Register>
Result registerWith(const char* operation, void* comm, void** mhandle, Register&& make) {
  if (comm == nullptr || mhandle == nullptr) return misuse("%s: null comm or handle", operation);
  auto registration = std::make_unique<Registration>();
  registration->dev = deviceOf(comm);
  {
    State& st = state();
    std::lock_guard lock(st.mutex);
    transport::Transport* registrar = registrarOf(st, registration->dev);
    if (registrar == nullptr) return misuse("%s: not a comm of this plugin, or called before init", operation);
    Status s = make(*registrar, &registration->region);
    if (!s.isOk()) return fail(operation, s);
  }
  *mhandle = registration.release();
  return nccl_abi::kSuccess;
}

Result registerMemory(void* comm, void* data, size_t size, int type, void** mhandle) {
  return guarded("regMr", [&]() -> Result {
    if (type != nccl_abi::kPtrHost && type != nccl_abi::kPtrCuda) {
      log(kLogWarn, "regMr: unknown memory type %d", type);
      return nccl_abi::kInternalError;
    }
    const auto kind = type == nccl_abi::kPtrCuda ? transport::kDevicePointer : transport::kHostPointer;
    return registerWith("regMr", comm, mhandle, [&](transport::Transport& t, transport::MemoryRegion* region) {
      return t.registerMemory(data, size, kind, region);
    });
  });
}

Result registerDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  return guarded("regMrDmaBuf", [&]() -> Result {
    if (type == nccl_abi::kPtrHost) return registerMemory(comm, data, size, type, mhandle);
    return registerWith("regMrDmaBuf", comm, mhandle, [&](transport::Transport& t, transport::MemoryRegion* region) {
      return t.registerDmaBuf(data, size, fd, offset, region);
    });
  });
}

Result deregisterMemory(void*, void* mhandle) {
  return guarded("deregMr", [&]() -> Result {
    auto* registration = static_cast<Registration*>(mhandle);
    if (registration != nullptr && registration->region.handle != nullptr) {
      State& st = state();
      std::lock_guard lock(st.mutex);
      if (transport::Transport* registrar = registrarOf(st, registration->dev)) {
        registrar->deregisterMemory(&registration->region);
      }
    }
    delete registration;
    return nccl_abi::kSuccess;
  });
}

Result isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void** request) {
  return guarded("isend", [&]() -> Result {
    SendComm* c = as<SendComm>(send_comm, Kind::kSend);
    if (c == nullptr || request == nullptr) return misuse("isend: %s", "not a send comm");
    *request = nullptr;
    Request* wrapper = c->requests.take();
    if (wrapper == nullptr) return nccl_abi::kSuccess;  // all in flight: NCCL calls again
    return wrapRequest("isend", wrapper, c, nullptr, 1, request, [&](transport::Request** r) {
      return c->comm->isend(data, size, static_cast<uint32_t>(tag), regionOf(mhandle), r);
    });
  });
}

Result irecv(void* recv_comm, int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
             void** request) {
  return guarded("irecv", [&]() -> Result {
    RecvComm* c = as<RecvComm>(recv_comm, Kind::kRecv);
    if (c == nullptr || request == nullptr) return misuse("irecv: %s", "not a recv comm");
    if (n < 1 || n > transport::kMaxRecvs) return misuse("irecv: %s", "n outside [1, maxRecvs]");
    uint32_t tag_values[transport::kMaxRecvs];
    const transport::MemoryRegion* regions[transport::kMaxRecvs];
    for (int i = 0; i < n; ++i) tag_values[i] = static_cast<uint32_t>(tags[i]);
    regionsOf(n, mhandles, regions);
    *request = nullptr;
    Request* wrapper = c->requests.take();
    if (wrapper == nullptr) return nccl_abi::kSuccess;  // all in flight: NCCL calls again
    return wrapRequest("irecv", wrapper, nullptr, c, n, request, [&](transport::Request** r) {
      return c->comm->irecv(n, data, sizes, tag_values, regions, r);
    });
  });
}

Result iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) {
  return guarded("iflush", [&]() -> Result {
    RecvComm* c = as<RecvComm>(recv_comm, Kind::kRecv);
    if (c == nullptr || request == nullptr) return misuse("iflush: %s", "not a recv comm");
    if (n < 1 || n > transport::kMaxRecvs || data == nullptr || sizes == nullptr) {
      return misuse("iflush: %s", "n outside [1, maxRecvs] or null buffers");
    }
    *request = nullptr;
    size_t wide[transport::kMaxRecvs];
    const transport::MemoryRegion* regions[transport::kMaxRecvs];
    for (int i = 0; i < n; ++i) wide[i] = sizes[i] > 0 ? static_cast<size_t>(sizes[i]) : 0;
    regionsOf(n, mhandles, regions);
    Request* wrapper = c->requests.take();
    if (wrapper == nullptr) return misuse("iflush: %s", "more requests in flight than the comm takes");
    return wrapRequest("iflush", wrapper, nullptr, c, 0, request, [&](transport::Request** r) {  // no sizes
      return c->comm->iflush(n, data, wide, regions, r);
    });
  });
}

Result test(void* request, int* done, int* sizes, size_t max_size) {
  return guarded("test", [&]() -> Result {
    Request* r = as<Request>(request, Kind::kRequest);
    if (r == nullptr || !r->in_use || done == nullptr) return misuse("test: %s", "not an active request");
    bool finished = false;
    size_t bytes[transport::kMaxRecvs] = {};
    Status s = r->send != nullptr ? r->send->comm->test(r->request, &finished, bytes)
                                  : r->recv->comm->test(r->request, &finished, bytes);
    if (!s.isOk()) {
      RequestPool::release(r);
      return fail("test", s);
    }
    *done = finished ? 1 : 0;
    if (!finished) return nccl_abi::kSuccess;
    for (int i = 0; i < r->n && sizes != nullptr; ++i) {
      if (bytes[i] > max_size) {
        RequestPool::release(r);
        return misuse("test: %s", "a message is larger than this plugin version's int sizes");
      }
      sizes[i] = static_cast<int>(bytes[i]);
    }
    RequestPool::release(r);
    return nccl_abi::kSuccess;
  });
}

Result closeSend(void* send_comm) {
  return guarded("closeSend", [&]() -> Result {
    delete as<SendComm>(send_comm, Kind::kSend);
    return nccl_abi::kSuccess;
  });
}

Result closeRecv(void* recv_comm) {
  return guarded("closeRecv", [&]() -> Result {
    delete as<RecvComm>(recv_comm, Kind::kRecv);
    return nccl_abi::kSuccess;
  });
}

Result closeListen(void* listen_comm) {
  return guarded("closeListen", [&]() -> Result {
    delete as<ListenComm>(listen_comm, Kind::kListen);
    return nccl_abi::kSuccess;
  });
}

Result initContext(void** context, uint64_t comm_id, const nccl_abi::CommConfig* config, nccl_abi::Logger logger) {
  return guarded("init", [&]() -> Result {
    if (context == nullptr) return misuse("init: %s", "null context");
    Result r = init(logger);
    if (r != nccl_abi::kSuccess) return r;
    *context = new Context{comm_id, config != nullptr ? config->traffic_class : nccl_abi::kTrafficClassUndefined};
    return nccl_abi::kSuccess;
  });
}

Result finalizeContext(void* context) {
  return guarded("finalize", [&]() -> Result {
    delete static_cast<Context*>(context);
    return nccl_abi::kSuccess;
  });
}

}  // namespace megascale::nccl_plugin
