// megascale-run under a Slurm allocation: what share of the job this host's megascale-run starts, where the
// job's store is, and the requeue after a pre-emption notice. One megascale-run per node (`srun
// --ntasks-per-node=1 megascale-run ...`, or the batch script itself on one node) finds it all in SLURM_*.
#pragma once

#include <string>

#include "bootstrap/slurm_job.h"

namespace megascale::launcher {

struct SlurmHostShare {
  int nproc = 0;        // ranks this host starts
  int world_size = 0;
  int rank_offset = 0;  // the global rank of this host's first rank
  std::string job_id;   // the store's key space for this run of the job (a requeued run gets a fresh one)
  /// Several nodes: tcp://<first node>:<port derived from the job>, served by node 0's megascale-run (every
  /// node derives the same). One node: empty, and megascale-run serves a loopback store as without Slurm.
  std::string store_url;
  bool serves_store = false;

  /// "Slurm job 42 (run 1): node 0 of 2, ranks 0-7 of 16, store tcp://n1:17353 served here".
  std::string describe(const SlurmJob& job) const;
};

/// ranks_per_host: megascale-run's -n when given (> 0), else each node runs its Slurm tasks' worth of ranks
/// (SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE). Throws Error(kInvalidArgument) for a layout with no ranks.
SlurmHostShare slurmHostShare(const SlurmJob& job, int ranks_per_host);

/// Asks Slurm to requeue the job (`scontrol requeue ID`); returns "" on success, else what went wrong.
std::string requeueSlurmJob(const std::string& slurm_job_id);

}  // namespace megascale::launcher
