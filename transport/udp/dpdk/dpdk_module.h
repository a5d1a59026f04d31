// The contract between the udp transport and its DPDK module (libmegascale-udp-dpdk.so): one C entry point that
// opens a DPDK io for a setup, or says why not. Only the module links DPDK.
#pragma once

#include <cstddef>

#include "transport/udp/udp_io.h"

namespace megascale::transport {

inline constexpr const char* kDpdkModuleName = "libmegascale-udp-dpdk.so";
inline constexpr const char* kDpdkOpenSymbol = "megascale_udp_dpdk_open";
/// A new io (the caller owns it), or null with the reason in `error`.
using DpdkOpenFunction = UdpIo* (*)(const UdpIoSetup* setup, char* error, size_t error_bytes);

}  // namespace megascale::transport
