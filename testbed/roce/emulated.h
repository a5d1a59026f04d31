// The emulated RoCE device's objects (testbed only, never part of libmegascale). Each verbs object begins with
// the libibverbs struct the caller sees, so a pointer converts both ways; the rest is the emulation's state.
// Device: one per network interface picked by MEGASCALE_EMU_ROCE_NETDEVS (default: every interface with an
// IPv4 address but lo; lo when there is none), named "emroce<N>", one port whose GID 0 is the RoCEv2 GID of
// the interface's address, whose state follows the interface's link (ip link set down: port down).
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace megascale::testbed::roce {

struct Netdev {
  std::string name;     // "veth0"
  int ifindex = 0;
  in_addr ipv4{};       // the address RoCEv2 packets leave from and arrive at (UDP)
  uint8_t mac[6] = {};
  int mtu = 1500;
};

struct EmuDevice {
  ibv_device device;  // first: ibv_device* <-> EmuDevice*
  Netdev netdev;
  uint64_t guid;      // network byte order, from the MAC as EUI-64
};

/// The devices, found once per process.
const std::vector<EmuDevice*>& emulatedDevices();

/// The interface's link state now: IBV_PORT_ACTIVE when up with carrier, else IBV_PORT_DOWN.
ibv_port_state linkState(const Netdev& netdev);

/// The RoCEv2 GID of an IPv4 address (::ffff:a.b.c.d).
ibv_gid roceGid(in_addr ipv4);

/// The IPv4 address inside a RoCEv2 GID; false for a GID that is not IPv4-mapped.
bool gidToIpv4(const ibv_gid& gid, in_addr* ipv4);

struct EmuContext {
  ibv_context context;  // first
  EmuDevice* device;
  std::mutex lock;
  uint32_t next_key = 0x100;  // lkeys and rkeys
};

struct EmuPd {
  ibv_pd pd;  // first
};

struct EmuMr {
  ibv_mr mr;  // first
  int access;
};

struct EmuCq {
  ibv_cq cq;  // first
  std::mutex lock;
  std::vector<ibv_wc> entries;  // completions not yet polled, oldest first
  bool armed = false;           // ibv_req_notify_cq was called: the next completion signals the channel
};

/// A queue pair. Its number carries its UDP port (qp_num = port << 8 | a per-port counter), so a peer reaches
/// it at (the IPv4 address in the GID, qp_num >> 8) with no table to consult; each queue pair has its own
/// port, so several of them between two hosts spread over ECMP paths as distinct UDP flows.
struct EmuQp {
  ibv_qp qp;  // first
  int fd = -1;  // its UDP socket
  ibv_qp_attr attr{};  // what modify_qp set so far
  int attr_mask = 0;   // which of attr's fields were ever set
  ibv_qp_cap cap{};
};

/// Points the context's data-path operations (post, poll, notify) at the emulation.
void installDataPathOps(ibv_context_ops* ops);

inline EmuContext* emu(ibv_context* c) { return reinterpret_cast<EmuContext*>(c); }

/// Sets errno and returns it (the verbs convention for int results) or null (for pointer results).
int fail(int error);
template <typename T>
T* failNull(int error) {
  fail(error);
  return nullptr;
}

}  // namespace megascale::testbed::roce
