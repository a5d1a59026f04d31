#include "bootstrap/launch_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "bootstrap/launcher_channel.h"
#include "bootstrap/slurm_job.h"
#include "common/status.h"

namespace megascale {
namespace {

LaunchInfo fromMap(const std::map<std::string, std::string>& vars) {
  return launchInfoFromEnvironment([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

const std::string kSecretHex = "00112233445566778899aabbccddeeff";

TEST(LaunchEnv, MegascaleRun) {
  UniqueId id = UniqueId::generate("tcp://10.1.1.1:5000");
  LaunchInfo info = fromMap({{"MEGASCALE_UNIQUE_ID", id.serialize()},
                             {"MEGASCALE_RANK", "3"},
                             {"MEGASCALE_WORLD_SIZE", "8"},
                             {"MEGASCALE_LOCAL_RANK", "1"},
                             {"MEGASCALE_LOCAL_SIZE", "2"}});
  EXPECT_EQ(info.launcher, "megascale-run");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.id.secret, id.secret);
  EXPECT_FALSE(info.hosts_store);
}

TEST(LaunchEnv, Torchrun) {
  LaunchInfo info = fromMap({{"RANK", "0"},
                             {"WORLD_SIZE", "4"},
                             {"LOCAL_RANK", "0"},
                             {"LOCAL_WORLD_SIZE", "2"},
                             {"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", "29500"},
                             {"TORCHELASTIC_RUN_ID", "run7"},
                             {"MEGASCALE_JOB_SECRET", kSecretHex}});
  EXPECT_EQ(info.launcher, "torchrun");
  EXPECT_EQ(info.id.store_url, "tcp://127.0.0.1:29500");
  EXPECT_EQ(info.id.job_id, "run7");
  EXPECT_EQ(info.id.secret.size(), 16u);
  EXPECT_TRUE(info.hosts_store);  // rank 0 serves the store at MASTER_ADDR:MASTER_PORT
  LaunchInfo other = fromMap({{"RANK", "2"},
                              {"WORLD_SIZE", "4"},
                              {"MASTER_ADDR", "127.0.0.1"},
                              {"MASTER_PORT", "29500"},
                              {"TORCHELASTIC_RUN_ID", "run7"},
                              {"MEGASCALE_JOB_SECRET", kSecretHex}});
  EXPECT_FALSE(other.hosts_store);
  EXPECT_EQ(other.id.secret, info.id.secret);
}

TEST(LaunchEnv, PlainSrunDerivesTheStoreFromTheStep) {
  // srun -N2 -n4 without PMIx: task 0 serves the store on the step's first node, at a port every task derives.
  const std::map<std::string, std::string> base = {{"SLURM_NTASKS", "4"},          {"SLURM_JOB_ID", "321"},
                                                   {"SLURM_STEP_ID", "2"},         {"SLURM_RESTART_COUNT", "1"},
                                                   {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_STEP_NODELIST", "n[2-3]"},
                                                   {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}, {"SLURM_NODEID", "1"},
                                                   {"MEGASCALE_JOB_SECRET", kSecretHex}};
  auto task = [&](const char* procid, const char* node) {
    std::map<std::string, std::string> vars = base;
    vars["SLURM_PROCID"] = procid;
    vars["SLURMD_NODENAME"] = node;
    return fromMap(vars);
  };
  const LaunchInfo first = task("0", "n2"), last = task("3", "n3");
  const std::string url = "tcp://n2:" + std::to_string(derivedStorePort("321", "2"));
  EXPECT_EQ(first.id.store_url, url);
  EXPECT_EQ(last.id.store_url, url);
  EXPECT_TRUE(first.hosts_store);
  EXPECT_FALSE(last.hosts_store);
  EXPECT_EQ(first.id.job_id, "slurm-321.r1.2");  // a requeued run starts a fresh key space
  EXPECT_EQ(first.id.job_id, last.id.job_id);
  EXPECT_EQ(last.local_size, 2);
  EXPECT_EQ(last.world_size, 4);
  // MASTER_PORT picks the port; task 0 placed elsewhere than the first node is told to name the store.
  std::map<std::string, std::string> vars = base;
  vars["SLURM_PROCID"] = "1";
  vars["MASTER_PORT"] = "23456";
  EXPECT_EQ(fromMap(vars).id.store_url, "tcp://n2:23456");
  try {
    task("0", "n3");
    FAIL() << "task 0 on the wrong node was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("task 0 runs on n3, not on the step's first node n2"), std::string::npos);
  }
}

TEST(LaunchEnv, SlurmAndOpenMpiWithAnExplicitStore) {
  LaunchInfo slurm = fromMap({{"SLURM_PROCID", "5"},
                              {"SLURM_NTASKS", "16"},
                              {"SLURM_LOCALID", "1"},
                              {"SLURM_JOB_ID", "99"},
                              {"MEGASCALE_STORE", "redis://10.0.0.2:6379"}});
  EXPECT_EQ(slurm.launcher, "slurm");
  EXPECT_EQ(slurm.rank, 5);
  EXPECT_EQ(slurm.world_size, 16);
  EXPECT_EQ(slurm.local_rank, 1);
  EXPECT_EQ(slurm.id.store_url, "redis://10.0.0.2:6379");
  EXPECT_FALSE(slurm.hosts_store);  // an external store is not ours to start
  LaunchInfo mpi = fromMap({{"OMPI_COMM_WORLD_RANK", "1"},
                            {"OMPI_COMM_WORLD_SIZE", "2"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                            {"MASTER_ADDR", "h"},
                            {"MASTER_PORT", "1234"}});
  EXPECT_EQ(mpi.launcher, "openmpi");
  EXPECT_EQ(mpi.rank, 1);
  EXPECT_EQ(mpi.id.store_url, "tcp://h:1234");
}

TEST(LaunchEnv, TorchrunAgentStoreIsUsedInsteadOfServingOnItsPort) {
  // torch's elastic agent already serves a TCPStore on MASTER_PORT: nobody may serve there again.
  std::map<std::string, std::string> vars{{"RANK", "0"},
                                          {"WORLD_SIZE", "2"},
                                          {"MASTER_ADDR", "10.0.0.5"},
                                          {"MASTER_PORT", "29500"},
                                          {"TORCHELASTIC_RUN_ID", "run7"},
                                          {"TORCHELASTIC_RESTART_COUNT", "2"},
                                          {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
  LaunchInfo info = fromMap(vars);
  EXPECT_EQ(info.rendezvous, Rendezvous::kTorchAgentStore);
  EXPECT_FALSE(info.hosts_store);
  EXPECT_EQ(info.rendezvous_host, "10.0.0.5");
  EXPECT_EQ(info.rendezvous_port, 29500);
  EXPECT_EQ(info.rendezvous_key, "megascale/run7.2/store");  // a restarted group never reads a stale URL
  EXPECT_FALSE(info.secret_given);
  vars["MEGASCALE_JOB_SECRET"] = kSecretHex;
  info = fromMap(vars);
  EXPECT_TRUE(info.secret_given);
  EXPECT_EQ(info.id.secret.size(), 16u);
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";  // torchrun with its own store elsewhere: as before
  info = fromMap(vars);
  EXPECT_EQ(info.rendezvous, Rendezvous::kKnown);
  EXPECT_TRUE(info.hosts_store);
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";  // an explicit store wins over the agent's
  vars["MEGASCALE_STORE"] = "tcp://10.0.0.9:7000";
  info = fromMap(vars);
  EXPECT_EQ(info.rendezvous, Rendezvous::kKnown);
  EXPECT_EQ(info.id.store_url, "tcp://10.0.0.9:7000");
}

TEST(LaunchEnv, MpirunWithoutMasterAddressRendezvousesThroughPmix) {
  std::map<std::string, std::string> vars{
      {"OMPI_COMM_WORLD_RANK", "2"},        {"OMPI_COMM_WORLD_SIZE", "4"},
      {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
      {"OMPI_MCA_ess_base_jobid", "12345"}, {"OMPI_MCA_orte_hnp_uri", "12344.0;tcp://10.1.2.3,172.17.0.1:43211"},
      {"PMIX_NAMESPACE", "12345"},          {"PMIX_RANK", "2"}};
  LaunchInfo info = fromMap(vars);
  EXPECT_EQ(info.launcher, "openmpi");
  EXPECT_EQ(info.rendezvous, Rendezvous::kPmix);
  EXPECT_EQ(info.rendezvous_host, "10.1.2.3");  // mpirun's host: rank 0's store listens toward it
  EXPECT_EQ(info.rendezvous_key, "megascale/ompi-12345/store");
  EXPECT_EQ(info.local_size, 2);
  vars["MASTER_ADDR"] = "h";  // explicit variables still win
  vars["MASTER_PORT"] = "1234";
  info = fromMap(vars);
  EXPECT_EQ(info.rendezvous, Rendezvous::kKnown);
  EXPECT_EQ(info.id.store_url, "tcp://h:1234");
}

TEST(LaunchEnv, StoreListensOnLoopbackWhenEveryRankIsHere) {
  EXPECT_EQ(listenAddressFor(4, 4, "10.1.2.3"), "127.0.0.1");
  // across hosts: the address routed toward the launcher's host (loopback here)
  EXPECT_EQ(listenAddressFor(4, 2, "127.0.0.1"), "127.0.0.1");
}

TEST(LaunchEnv, ClearErrorsForMissingOrMalformedVariables) {
  auto expectError = [](const std::map<std::string, std::string>& vars, const std::string& fragment) {
    try {
      fromMap(vars);
      ADD_FAILURE() << "accepted: " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expectError({}, "no launcher environment");
  expectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, "MASTER_ADDR");
  expectError({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}, "MASTER_ADDR");  // no PMIx either
  expectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"MASTER_PORT", "1"}},
              "MASTER_ADDR");
  expectError({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}, "RANK='x'");
  expectError({{"RANK", "4"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}, "world size");
  expectError(
      {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"MEGASCALE_STORE", "tcp://h:1"}, {"MEGASCALE_JOB_SECRET", "abc"}},
      "MEGASCALE_JOB_SECRET");
  expectError({{"MEGASCALE_UNIQUE_ID", "garbage"}, {"MEGASCALE_RANK", "0"}, {"MEGASCALE_WORLD_SIZE", "1"}},
              "unique id");
}

}  // namespace
}  // namespace megascale
