// The two point-to-point layers sendrecv_perf --net-plugin compares, behind one interface so both are driven by
// the same loops: the bare megascale network transport, and an NCCL net plugin loaded like NCCL loads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nccl_plugin/plugin_loader.h"

namespace megascale::bench {

constexpr size_t kP2pHandleBytes = 128;  // what the bootstrap exchanges per rank, as NCCL's handle

/// One rank's end of a pair: a send comm to the peer and a receive comm from it. Every call is non-blocking;
/// failures throw std::runtime_error naming the layer and the operation.
class P2pLayer {
 public:
  virtual ~P2pLayer() = default;
  virtual std::string name() const = 0;         // column title: "transport" or "plugin"
  virtual std::string description() const = 0;  // header line: what exactly runs
  virtual void listen(uint8_t handle[kP2pHandleBytes]) = 0;
  /// Polled alternately until both return true: the send comm to `peer_handle`, the receive comm from the peer.
  virtual bool pollConnect(const uint8_t peer_handle[kP2pHandleBytes]) = 0;
  virtual bool pollAccept() = 0;
  virtual void* registerMemory(bool send_side, void* data, size_t size) = 0;
  virtual void deregisterMemory(bool send_side, void* region) = 0;
  /// Null when no request slot is free now.
  virtual void* isend(const void* data, size_t size, void* region) = 0;
  virtual void* irecv(void* data, size_t capacity, void* region) = 0;
  /// True once done; *size gets the bytes moved.
  virtual bool testSend(void* request, size_t* size) = 0;
  virtual bool testRecv(void* request, size_t* size) = 0;
  virtual void close() = 0;
};

/// The network transport MEGASCALE_TRANSPORT names (its network transport), with the knobs the plugin would use, on `bind_address`.
std::unique_ptr<P2pLayer> makeTransportLayer(const std::string& bind_address);

/// The plugin at `path`, version `version` ("" = newest it exports), device 0. Throws if it cannot be loaded or
/// initialized.
std::unique_ptr<P2pLayer> makePluginLayer(const std::string& path, const std::string& version);

}  // namespace megascale::bench
