// What Slurm tells a process about the job it runs in: the allocation's nodes, this node's place among them,
// the tasks each node runs and the job's id and restart count. Read by the rendezvous of ranks that srun starts
// directly (launch_env.cc) and by megascale-run, which under an allocation takes its world size, rank offset and
// ranks per host from here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/launch_env.h"

namespace megascale {

struct SlurmJob {
  std::string job_id;                  // SLURM_JOB_ID
  int restart_count = 0;               // SLURM_RESTART_COUNT: how often the job was requeued
  std::string step_id;                 // SLURM_STEP_ID: empty in the batch script itself
  int node_id = 0;                     // SLURM_NODEID: this node's index in node_names
  std::vector<std::string> node_names; // SLURM_JOB_NODELIST, expanded, in Slurm's order
  std::vector<int> tasks_per_node;     // tasks on each node (SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE)

  int nodes() const { return static_cast<int>(node_names.size()); }
  int totalTasks() const;
  /// Tasks on the nodes before this one: the global rank of this node's first task.
  int tasksBefore(int node) const;
  /// Store keys of this run: a requeued job's next run ("slurm-42.r1") starts a fresh key space.
  std::string keySpace() const;
};

/// The job this process runs in; nothing outside Slurm (no SLURM_JOB_ID). Throws Error(kInvalidArgument) naming
/// the variable that is malformed or inconsistent.
std::optional<SlurmJob> slurmJobFromEnvironment(const EnvLookup& env);

/// Slurm's compressed task counts, "2(x3),1" -> 2 2 2 1. Throws Error(kInvalidArgument) naming the text.
std::vector<int> expandTasksPerNode(std::string_view text);

/// A port for a store that every task of one job step derives alike, in [15000, 25000) (below Linux's ephemeral
/// ports): used where nothing else carries the store's address (plain srun without PMIx or MASTER_PORT).
int derivedStorePort(std::string_view job_id, std::string_view step_id);

}  // namespace megascale
