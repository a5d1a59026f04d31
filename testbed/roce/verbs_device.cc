// The device half of the emulated libibverbs: the device list, opening a device, and what it and its port
// report (queries, GIDs, P_Keys, the sysfs files ibv_devinfo reads).
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "testbed/roce/emulated.h"

#undef ibv_query_port

using namespace megascale::testbed::roce;

namespace {

constexpr uint32_t kVendorId = 0xffff;  // PCI's "no vendor": an emulated NIC must never pass for a real one
constexpr int kMaxQueuePairs = 4096;
constexpr int kMaxWorkRequests = 4096;
constexpr int kMaxScatterGather = 16;
constexpr int kMaxCompletionQueueEntries = 65536;

int deviceIndex(const ibv_device* device) {
  const auto& all = emulatedDevices();
  for (size_t i = 0; i < all.size(); ++i) {
    if (&all[i]->device == device) return static_cast<int>(i);
  }
  return -1;
}

ibv_mtu mtuFor(int netdev_mtu) {
  // What fits in one UDP datagram on the interface after IP, UDP and the transport headers.
  const int room = netdev_mtu - 20 - 8 - 64;
  if (room >= 4096) return IBV_MTU_4096;
  if (room >= 2048) return IBV_MTU_2048;
  if (room >= 1024) return IBV_MTU_1024;
  if (room >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

}  // namespace

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  const auto& all = emulatedDevices();
  auto** list = static_cast<ibv_device**>(std::calloc(all.size() + 1, sizeof(ibv_device*)));
  if (list == nullptr) return failNull<ibv_device*>(ENOMEM);
  for (size_t i = 0; i < all.size(); ++i) list[i] = &all[i]->device;
  if (num_devices != nullptr) *num_devices = static_cast<int>(all.size());
  return list;
}

void ibv_free_device_list(ibv_device** list) { std::free(list); }

const char* ibv_get_device_name(ibv_device* device) { return device->name; }

__be64 ibv_get_device_guid(ibv_device* device) { return reinterpret_cast<EmuDevice*>(device)->guid; }

int ibv_get_device_index(ibv_device* device) { return deviceIndex(device); }

ibv_context* ibv_open_device(ibv_device* device) {
  if (deviceIndex(device) < 0) return failNull<ibv_context>(ENODEV);
  auto* c = new EmuContext{};
  c->device = reinterpret_cast<EmuDevice*>(device);
  c->context.device = device;
  c->context.cmd_fd = -1;
  c->context.async_fd = eventfd(0, EFD_CLOEXEC);
  c->context.num_comp_vectors = 1;
  pthread_mutex_init(&c->context.mutex, nullptr);
  c->context.abi_compat = nullptr;  // not an extended context: the inline helpers use the exported calls
  installDataPathOps(&c->context.ops);
  startNic(c);
  return &c->context;
}

int ibv_close_device(ibv_context* context) {
  EmuContext* c = emu(context);
  stopNic(c);
  if (c->context.async_fd >= 0) close(c->context.async_fd);
  pthread_mutex_destroy(&c->context.mutex);
  delete c;
  return 0;
}

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  EmuContext* c = emu(context);
  std::memset(attr, 0, sizeof(*attr));
  std::snprintf(attr->fw_ver, sizeof(attr->fw_ver), "megascale-emulated 1.0");
  attr->node_guid = c->device->guid;
  attr->sys_image_guid = c->device->guid;
  attr->max_mr_size = ~uint64_t{0};
  attr->page_size_cap = 4096;
  attr->vendor_id = kVendorId;
  attr->vendor_part_id = 1;
  attr->hw_ver = 1;
  attr->max_qp = kMaxQueuePairs;
  attr->max_qp_wr = kMaxWorkRequests;
  attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
  attr->max_sge = kMaxScatterGather;
  attr->max_sge_rd = kMaxScatterGather;
  attr->max_cq = 65536;
  attr->max_cqe = kMaxCompletionQueueEntries;
  attr->max_mr = 1 << 20;
  attr->max_pd = 1 << 16;
  attr->max_qp_rd_atom = 16;
  attr->max_qp_init_rd_atom = 16;
  attr->max_res_rd_atom = 16 * kMaxQueuePairs;
  attr->atomic_cap = IBV_ATOMIC_NONE;
  attr->max_pkeys = 1;
  attr->local_ca_ack_delay = 16;
  attr->phys_port_cnt = static_cast<uint8_t>(c->device->ports.size());
  return 0;
}

// The exported (compat) entry: the inline ibv_query_port of <infiniband/verbs.h> zeroes the caller's whole
// struct and lands here for a context that is not extended; the fields after link_layer are the newer ones.
int ibv_query_port(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  EmuContext* c = emu(context);
  if (!c->device->hasPort(port)) return fail(EINVAL);
  const Netdev& netdev = c->device->netdev(port);
  ibv_port_attr a{};
  a.state = linkState(netdev);
  a.max_mtu = IBV_MTU_4096;
  a.active_mtu = mtuFor(netdev.mtu);
  a.gid_tbl_len = gidTableLength(*c->device);
  a.port_cap_flags = IBV_PORT_CM_SUP;
  a.max_msg_sz = 1u << 31;
  a.pkey_tbl_len = 1;
  a.max_vl_num = 1;
  a.active_width = 2;   // 4X
  a.active_speed = 32;  // EDR: 25 Gb/s a lane, 100 Gb/s in all (what the emulation claims, not what it moves)
  a.phys_state = a.state == IBV_PORT_ACTIVE ? 5 : 3;  // LinkUp : Disabled
  a.link_layer = c->device->infiniband ? IBV_LINK_LAYER_INFINIBAND : IBV_LINK_LAYER_ETHERNET;
  if (c->device->infiniband) a.lid = c->device->lid(port);
  std::memcpy(attr, &a, offsetof(ibv_port_attr, flags));
  return 0;
}

// A port's GID table, as a ConnectX lists it: its interface's address as RoCE v1 (index 0), then as RoCE v2
// (index 1; kRoceV2GidIndex). Both entries hold the same IPv4-mapped GID; only the type tells them apart.
// An InfiniBand port has one: its port GID (ibGid).
namespace {
bool validGid(ibv_context* context, uint32_t port, uint32_t index) {
  const EmuDevice& d = *emu(context)->device;
  return d.hasPort(port) && index < static_cast<uint32_t>(gidTableLength(d));
}
ibv_gid gidAt(ibv_context* context, uint32_t port) {
  const EmuDevice& d = *emu(context)->device;
  return d.infiniband ? ibGid(d.netdev(port).ipv4) : roceGid(d.netdev(port).ipv4);
}
}  // namespace

int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  if (index < 0 || !validGid(context, port, static_cast<uint32_t>(index))) return fail(EINVAL);
  *gid = gidAt(context, port);
  return 0;
}

// Private (providers' <infiniband/driver.h>): *type is enum ibv_gid_type_sysfs: IB/RoCE v1 0, RoCE v2 1.
int ibv_query_gid_type(ibv_context* context, uint8_t port, unsigned int index, int* type) {
  if (!validGid(context, port, index)) return fail(EINVAL);
  *type = !emu(context)->device->infiniband && index == kRoceV2GidIndex ? 1 : 0;
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry, uint32_t,
                      size_t entry_size) {
  if (!validGid(context, port, index)) return fail(EINVAL);
  if (entry_size < sizeof(ibv_gid_entry)) return fail(EINVAL);
  const EmuDevice& d = *emu(context)->device;
  entry->gid = gidAt(context, port);
  entry->gid_index = index;
  entry->port_num = port;
  entry->gid_type = d.infiniband                ? IBV_GID_TYPE_IB
                    : index == kRoceV2GidIndex ? IBV_GID_TYPE_ROCE_V2
                                                : IBV_GID_TYPE_ROCE_V1;
  entry->ndev_ifindex = d.infiniband ? 0 : static_cast<uint32_t>(d.netdev(port).ifindex);
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries, uint32_t flags,
                             size_t entry_size) {
  // Every port's table, port by port.
  const EmuDevice& d = *emu(context)->device;
  const size_t length = static_cast<size_t>(gidTableLength(d));
  if (max_entries < length * d.ports.size()) return -fail(EINVAL);
  size_t filled = 0;
  for (uint32_t port = 1; port <= d.ports.size(); ++port) {
    for (size_t i = 0; i < length; ++i, ++filled) {
      auto* entry = reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<uint8_t*>(entries) + filled * entry_size);
      const int rc = _ibv_query_gid_ex(context, port, static_cast<uint32_t>(i), entry, flags, entry_size);
      if (rc != 0) return -rc;
    }
  }
  return static_cast<ssize_t>(filled);
}

int ibv_query_pkey(ibv_context* context, uint8_t port, int index, __be16* pkey) {
  if (!emu(context)->device->hasPort(port) || index != 0) return fail(EINVAL);
  *pkey = 0xffff;
  return 0;
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port, __be16 pkey) {
  if (!emu(context)->device->hasPort(port) || pkey != 0xffff) return -fail(EINVAL);
  return 0;
}

// Reads under the emulated devices' sysfs directories are answered here; any other path is read for real.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  for (EmuDevice* d : emulatedDevices()) {
    if (std::strcmp(dir, d->device.ibdev_path) != 0 && std::strcmp(dir, d->device.dev_path) != 0) continue;
    const char* value = nullptr;
    if (std::strcmp(file, "board_id") == 0) value = "MEGASCALE_EMULATED_ROCE";
    if (std::strcmp(file, "fw_ver") == 0) value = "megascale-emulated 1.0";
    if (std::strcmp(file, "hw_rev") == 0) value = "1";
    if (std::strcmp(file, "node_type") == 0) value = "1: CA";
    if (value == nullptr) return -fail(ENOENT);
    int n = std::snprintf(buf, size, "%s", value);
    return n < static_cast<int>(size) ? n : static_cast<int>(size) - 1;
  }
  char path[4096];
  std::snprintf(path, sizeof(path), "%s/%s", dir, file);
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return -1;
  size_t n = std::fread(buf, 1, size > 0 ? size - 1 : 0, f);
  std::fclose(f);
  if (size > 0) buf[n] = '\0';
  while (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
  return static_cast<int>(n);
}

int ibv_get_sysfs_path(char* buf, size_t size) {
  std::snprintf(buf, size, "/sys");
  return 0;
}

int ibv_fork_init(void) { return 0; }  // no pinning to protect: memory is read by the emulation's own threads

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  // Port events are not reported yet: a caller blocks here as on a NIC whose ports never change.
  uint64_t ignored;
  if (read(context->async_fd, &ignored, sizeof(ignored)) < 0) return -1;
  std::memset(event, 0, sizeof(*event));
  event->event_type = IBV_EVENT_PORT_ACTIVE;
  event->element.port_num = 1;
  return 0;
}

void ibv_ack_async_event(ibv_async_event*) {}

int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t[6], uint16_t*) { return fail(EOPNOTSUPP); }

}  // extern "C"
