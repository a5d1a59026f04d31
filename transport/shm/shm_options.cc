#include "transport/shm/shm_options.h"

#include "transport/knob_values.h"

namespace megascale::transport {

namespace {

const config::KnobRegistration kShmKnobs{
      {"MEGASCALE_SHM_RING_BYTES", config::Type::kInt, "4194304", "bytes", "transport", "shared-memory ring size"}};

}  // namespace

ShmOptions shmOptionsFromConfig() {
  return ShmOptions{static_cast<size_t>(knobInRange("MEGASCALE_SHM_RING_BYTES", 4096, int64_t{1} << 40))};
}

}  // namespace megascale::transport
