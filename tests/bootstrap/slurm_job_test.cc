#include "bootstrap/slurm_job.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/status.h"

namespace megascale {
namespace {

std::optional<SlurmJob> slurmJobFrom(const std::map<std::string, std::string>& vars) {
  return slurmJobFromEnvironment([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

std::string refusal(const std::map<std::string, std::string>& vars) {
  try {
    slurmJobFrom(vars);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SlurmJob, NothingOutsideSlurm) { EXPECT_FALSE(slurmJobFrom({{"SLURM_NNODES", "2"}}).has_value()); }

TEST(SlurmJob, ReadsTheAllocation) {
  const auto job = slurmJobFrom({{"SLURM_JOB_ID", "4242"},
                            {"SLURM_RESTART_COUNT", "2"},
                            {"SLURM_JOB_NODELIST", "gpu[07-09]"},
                            {"SLURM_NNODES", "3"},
                            {"SLURM_NODEID", "1"},
                            {"SLURM_TASKS_PER_NODE", "8(x2),4"}});
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->node_names, (std::vector<std::string>{"gpu07", "gpu08", "gpu09"}));
  EXPECT_EQ(job->node_id, 1);
  EXPECT_EQ(job->tasks_per_node, (std::vector<int>{8, 8, 4}));
  EXPECT_EQ(job->totalTasks(), 20);
  EXPECT_EQ(job->tasksBefore(2), 16);
  EXPECT_EQ(job->keySpace(), "slurm-4242.r2");
}

TEST(SlurmJob, TasksPerNodeWinsOverTheLayoutList) {
  // Inside `srun --ntasks-per-node=1 megascale-run` the list is the step's; the batch job's count is the one set.
  const auto job = slurmJobFrom({{"SLURM_JOB_ID", "7"},
                            {"SLURM_NODELIST", "a,b"},
                            {"SLURM_NTASKS_PER_NODE", "4"},
                            {"SLURM_TASKS_PER_NODE", "1(x2)"}});
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->tasks_per_node, (std::vector<int>{4, 4}));
  EXPECT_EQ(job->keySpace(), "slurm-7.r0");
}

TEST(SlurmJob, RefusesWhatDoesNotAddUp) {
  EXPECT_NE(refusal({{"SLURM_JOB_ID", "1"}}).find("SLURM_JOB_NODELIST is not set"), std::string::npos);
  EXPECT_NE(refusal({{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_NNODES", "3"}})
                .find("SLURM_NNODES=3 but SLURM_JOB_NODELIST 'n[1-2]' names 2 nodes"),
            std::string::npos);
  EXPECT_NE(refusal({{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n1"}, {"SLURM_NODEID", "1"}})
                .find("SLURM_NODEID 1 is not below the job's 1 nodes"),
            std::string::npos);
  EXPECT_NE(refusal({{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n[1-"}}).find("hostlist 'n[1-'"),
            std::string::npos);
  EXPECT_NE(refusal({{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "4"}})
                .find("counts 1 nodes but the job has 2"),
            std::string::npos);
  EXPECT_NE(refusal({{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n1"}, {"SLURM_RESTART_COUNT", "x"}})
                .find("SLURM_RESTART_COUNT 'x'"),
            std::string::npos);
}

TEST(SlurmJob, ExpandsTaskCounts) {
  EXPECT_EQ(expandTasksPerNode("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expandTasksPerNode("16"), (std::vector<int>{16}));
  for (const char* bad : {"", "2(x", "2(x3", "a", "2,,1", "(x2)", "-1"}) {
    EXPECT_THROW(expandTasksPerNode(bad), Error) << bad;
  }
}

TEST(SlurmJob, DerivedPortsAreStableAndInRange) {
  const int port = derivedStorePort("4242", "0");
  EXPECT_EQ(port, derivedStorePort("4242", "0"));
  EXPECT_NE(port, derivedStorePort("4242", "1"));
  for (int job = 0; job < 1000; ++job) {
    const int p = derivedStorePort(std::to_string(job), "0");
    EXPECT_GE(p, 15000);
    EXPECT_LT(p, 25000);
  }
}

}  // namespace
}  // namespace megascale
