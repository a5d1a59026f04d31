// Who am I in this job? Read from the environment of whichever launcher started the process:
// megascale-run (MEGASCALE_*), torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT),
// Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) or Open MPI (OMPI_COMM_WORLD_*). The same binary
// therefore runs under megascale-run, srun and mpirun.
#pragma once

#include <functional>
#include <string>

#include "collectives/bootstrap/unique_id.h"

namespace megascale {

struct LaunchInfo {
  std::string launcher;  // "megascale-run", "torchrun", "slurm", "openmpi"
  UniqueId id;
  int rank = -1;
  int world_size = -1;
  int local_rank = -1;
  int local_size = -1;
  /// True when this process must host the store (rank 0 under torchrun/Slurm/MPI: the store lives at
  /// MASTER_ADDR:MASTER_PORT and nobody else starts it).
  bool hosts_store = false;
};

using EnvLookup = std::function<const char*(const char*)>;

/// Throws Error(kInvalidArgument) naming the variable that is missing or malformed.
LaunchInfo launchInfoFromEnvironment(const EnvLookup& env);
LaunchInfo launchInfoFromEnvironment();

}  // namespace megascale
