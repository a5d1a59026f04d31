// Built without PMIx (libpmix-dev absent at configure time): say what to do instead.
#include "bootstrap/launcher_channel.h"
#include "common/status.h"

namespace megascale {

std::unique_ptr<LauncherChannel> openPmixChannel() {
  throw Error(ErrorCode::kUnavailable,
              "launch: this megascale was built without PMIx (install libpmix-dev and rebuild), so under mpirun or "
              "srun set MEGASCALE_STORE=tcp://host:port or MASTER_ADDR and MASTER_PORT");
}

}  // namespace megascale
