#include "sim/process_stalls.h"

#include <stdexcept>

namespace megascale::sim {

ProcessStalls::ProcessStalls(double per_second, Picoseconds mean_length, uint64_t seed)
    : random_(seed),
      running_seconds_(per_second > 0 ? per_second : 1),
      stall_seconds_(mean_length > 0 ? static_cast<double>(kSecond) / static_cast<double>(mean_length) : 1) {
  if (!(per_second > 0) || mean_length <= 0) {
    throw std::invalid_argument("process stalls need a rate above 0 a second and a mean length above 0");
  }
  drawNext();
}

void ProcessStalls::drawNext() {
  start_ = end_ + static_cast<Picoseconds>(running_seconds_(random_) * static_cast<double>(kSecond));
  end_ = start_ + static_cast<Picoseconds>(stall_seconds_(random_) * static_cast<double>(kSecond));
}

Picoseconds ProcessStalls::actsAt(Picoseconds t) {
  while (end_ <= t) drawNext();
  return t >= start_ ? end_ : t;
}

}  // namespace megascale::sim
