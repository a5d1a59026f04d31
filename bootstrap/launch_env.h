// Who am I in this job? Read from the environment of whichever launcher started the process:
// megascale-run (MEGASCALE_*), torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT),
// Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) or Open MPI (OMPI_COMM_WORLD_*). The same binary
// therefore runs under megascale-run, srun and mpirun.
//
// Where the job's store is comes from, in order: the unique id (megascale-run); MEGASCALE_STORE; the
// launcher's own rendezvous service when it has one (torchrun's agent store, which already occupies
// MASTER_PORT; PMIx under mpirun or srun --mpi=pmix): rank 0 serves the store on a free port and hands its
// URL to the others through it; else MASTER_ADDR:MASTER_PORT, served by rank 0.
#pragma once

#include <functional>
#include <string>

#include "bootstrap/unique_id.h"

namespace megascale {

/// How the ranks learn the store's URL.
enum class Rendezvous {
  kKnown,           // in the unique id, MEGASCALE_STORE or MASTER_ADDR:MASTER_PORT (see hosts_store)
  kPmix,            // published by rank 0 through the launcher's PMIx server (no MASTER_ADDR needed)
  kTorchAgentStore, // published by rank 0 in torchrun's agent TCPStore at MASTER_ADDR:MASTER_PORT
};

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

  Rendezvous rendezvous = Rendezvous::kKnown;
  /// kTorchAgentStore: the agent store's host and port. kPmix: a host on the launcher's side (mpirun's), to
  /// pick the interface rank 0's store listens on; empty if unknown.
  std::string rendezvous_host;
  int rendezvous_port = 0;
  /// Key rank 0 publishes under (unique per job and restart).
  std::string rendezvous_key;
  /// False when no MEGASCALE_JOB_SECRET was given and rank 0 makes one and publishes it with the URL.
  bool secret_given = true;
};

using EnvLookup = std::function<const char*(const char*)>;

/// Throws Error(kInvalidArgument) naming the variable that is missing or malformed.
LaunchInfo launchInfoFromEnvironment(const EnvLookup& env);
LaunchInfo launchInfoFromEnvironment();

}  // namespace megascale
