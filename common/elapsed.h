// Seconds on the steady clock since a time point: what logs, timeouts and rates are reckoned in.
#pragma once

#include <chrono>

namespace megascale {

inline double secondsSince(std::chrono::steady_clock::time_point from) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
}

}  // namespace megascale
