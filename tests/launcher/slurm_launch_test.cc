#include "launcher/slurm_launch.h"

#include <gtest/gtest.h>

#include "common/status.h"

namespace megascale::launcher {
namespace {

SlurmJob job(int node_id, std::vector<int> tasks) {
  SlurmJob j;
  j.job_id = "900";
  j.restart_count = 3;
  j.step_id = "0";
  j.node_id = node_id;
  for (size_t n = 0; n < tasks.size(); ++n) j.node_names.push_back("node" + std::to_string(n + 1));
  j.tasks_per_node = std::move(tasks);
  return j;
}

TEST(SlurmHostShare, OneNodeRunsItsTasksWithALoopbackStore) {
  const SlurmHostShare share = slurmHostShare(job(0, {4}), 0);
  EXPECT_EQ(share.nproc, 4);
  EXPECT_EQ(share.world_size, 4);
  EXPECT_EQ(share.rank_offset, 0);
  EXPECT_EQ(share.store_url, "");
  EXPECT_EQ(share.job_id, "slurm-900.r3");
}

TEST(SlurmHostShare, NodesTakeConsecutiveRanksAndNodeZeroServesTheStore) {
  const SlurmJob third = job(2, {8, 8, 4});
  const SlurmHostShare share = slurmHostShare(third, 0);
  EXPECT_EQ(share.nproc, 4);
  EXPECT_EQ(share.world_size, 20);
  EXPECT_EQ(share.rank_offset, 16);
  EXPECT_FALSE(share.serves_store);
  const SlurmHostShare first = slurmHostShare(job(0, {8, 8, 4}), 0);
  EXPECT_TRUE(first.serves_store);
  EXPECT_EQ(first.store_url, share.store_url);
  EXPECT_EQ(share.store_url.rfind("tcp://node1:", 0), 0u);
  EXPECT_EQ(share.describe(third), "Slurm job 900 (run 3): node 2 (node3) of 3, ranks 16-19 of 20, store " +
                                       share.store_url);
}

TEST(SlurmHostShare, DashNOverridesTheTaskCounts) {
  const SlurmHostShare share = slurmHostShare(job(1, {1, 1}), 8);  // srun --ntasks-per-node=1 megascale-run -n 8
  EXPECT_EQ(share.nproc, 8);
  EXPECT_EQ(share.world_size, 16);
  EXPECT_EQ(share.rank_offset, 8);
}

TEST(SlurmHostShare, TheBatchScriptOfSeveralNodesIsRefused) {
  SlurmJob batch = job(0, {4, 4});
  batch.step_id.clear();
  try {
    slurmHostShare(batch, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("start one per node (srun -N 2 -n 2 megascale-run ...)"), std::string::npos);
  }
}

TEST(SlurmHostShare, ANodeWithoutTasksIsRefused) {
  try {
    slurmHostShare(job(1, {2, 0}), 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gives node 1 no tasks"), std::string::npos);
  }
}

}  // namespace
}  // namespace megascale::launcher
