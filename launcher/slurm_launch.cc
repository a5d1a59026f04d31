#include "launcher/slurm_launch.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "common/status.h"

extern char** environ;

namespace megascale::launcher {

std::string SlurmHostShare::describe(const SlurmJob& job) const {
  std::string text = "Slurm job " + job.job_id + " (run " + std::to_string(job.restart_count) + "): node " +
                     std::to_string(job.node_id) + " (" + job.node_names[static_cast<size_t>(job.node_id)] + ") of " +
                     std::to_string(job.nodes()) + ", ranks " + std::to_string(rank_offset) + "-" +
                     std::to_string(rank_offset + nproc - 1) + " of " + std::to_string(world_size);
  if (!store_url.empty()) text += ", store " + store_url + (serves_store ? " served here" : "");
  return text;
}

SlurmHostShare slurmHostShare(const SlurmJob& job, int ranks_per_host) {
  SlurmHostShare share;
  if (ranks_per_host > 0) {
    share.nproc = ranks_per_host;
    share.world_size = ranks_per_host * job.nodes();
    share.rank_offset = ranks_per_host * job.node_id;
  } else {
    share.nproc = job.tasks_per_node[static_cast<size_t>(job.node_id)];
    share.world_size = job.totalTasks();
    share.rank_offset = job.tasksBefore(job.node_id);
  }
  if (share.nproc < 1) {
    throw Error(ErrorCode::kInvalidArgument, "Slurm job " + job.job_id + " gives node " + std::to_string(job.node_id) +
                                                 " no tasks: say how many ranks each node runs with -n");
  }
  share.job_id = job.keySpace();
  if (job.nodes() > 1 && job.step_id.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "megascale-run in the batch script of Slurm job " + job.job_id + " would start only this node's ranks of " +
                    std::to_string(job.nodes()) + " nodes: start one per node (srun -N " + std::to_string(job.nodes()) +
                    " -n " + std::to_string(job.nodes()) + " megascale-run ...)");
  }
  if (job.nodes() > 1) {
    share.store_url = "tcp://" + job.node_names.front() + ":" + std::to_string(derivedStorePort(job.job_id, share.job_id));
    share.serves_store = job.node_id == 0;
  }
  return share;
}

std::string requeueSlurmJob(const std::string& slurm_job_id) {
  std::string id = slurm_job_id;
  char program[] = "scontrol", verb[] = "requeue";
  char* argv[] = {program, verb, id.data(), nullptr};
  pid_t pid = 0;
  if (const int err = posix_spawnp(&pid, "scontrol", nullptr, nullptr, argv, environ); err != 0) {
    return std::string("cannot start scontrol: ") + std::strerror(err);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return "scontrol requeue " + slurm_job_id + " failed (status " + std::to_string(status) +
         "); was the job submitted with --requeue?";
}

}  // namespace megascale::launcher
