// Reading a transport's knobs: each transport declares its rows (config::KnobRegistration) and reads them into
// its options struct in its own folder; this is what the readers share.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"

namespace megascale::transport {

/// The knob's value, refused with its name and range unless within [low, high].
inline int64_t knobInRange(const char* knob, int64_t low, int64_t high) {
  const int64_t v = config::getInt(knob);
  if (v < low || v > high) {
    throw Error(ErrorCode::kInvalidArgument, std::string(knob) + "=" + std::to_string(v) + ": must be " +
                                                 std::to_string(low) + ".." + std::to_string(high));
  }
  return v;
}

}  // namespace megascale::transport
