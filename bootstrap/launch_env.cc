#include "bootstrap/launch_env.h"

#include <algorithm>
#include <cstdlib>

#include "bootstrap/slurm_job.h"
#include "common/crypto.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/status.h"

namespace megascale {

namespace {

int intVar(const EnvLookup& env, const char* name, bool required) {
  const char* v = env(name);
  if (v == nullptr || *v == '\0') {
    if (required) throw Error(ErrorCode::kInvalidArgument, std::string("launch: ") + name + " is not set");
    return -1;
  }
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > (1 << 24)) {
    throw Error(ErrorCode::kInvalidArgument, std::string("launch: ") + name + "='" + v + "' is not a valid number");
  }
  return static_cast<int>(x);
}

std::string strVar(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v != nullptr ? std::string(v) : std::string();
}

// Launchers other than megascale-run pass no secret; MEGASCALE_JOB_SECRET supplies one. Without it the
// secret is derived from the job id, which authenticates nothing against an attacker who can read it:
// say so once.
std::string jobSecret(const EnvLookup& env, const std::string& job_id) {
  std::string hex = strVar(env, "MEGASCALE_JOB_SECRET");
  if (!hex.empty()) return jobSecretFromHex(hex, "launch: MEGASCALE_JOB_SECRET");
  MSC_LOG_WARN(
      "MEGASCALE_JOB_SECRET is not set: connections are keyed by the job id only. Export the same "
      "random hex secret to all ranks to authenticate them.");
  Digest d = sha256(job_id.data(), job_id.size());
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

bool isTrue(const std::string& v) { return v == "1" || v == "True" || v == "true" || v == "TRUE"; }

// MEGASCALE_STORE, else MASTER_ADDR:MASTER_PORT served by rank 0. Returns false if neither is set.
bool fromStoreVariables(const EnvLookup& env, LaunchInfo& info, const std::string& job_id) {
  std::string url = strVar(env, "MEGASCALE_STORE");
  if (url.empty()) {
    std::string addr = strVar(env, "MASTER_ADDR");
    std::string port = strVar(env, "MASTER_PORT");
    if (addr.empty() || port.empty()) return false;
    url = "tcp://" + addr + ":" + port;
    info.hosts_store = info.rank == 0;  // torchrun convention: rank 0 serves the rendezvous store
  }
  info.id.store_url = url;
  info.id.job_id = job_id;
  info.id.secret = jobSecret(env, job_id);
  parseStoreUrl(url);
  return true;
}

// The store's URL travels through the launcher's service; the secret too unless MEGASCALE_JOB_SECRET is set.
void throughLauncher(const EnvLookup& env, LaunchInfo& info, Rendezvous how, const std::string& job_id) {
  info.rendezvous = how;
  info.id.job_id = job_id;
  info.rendezvous_key = "megascale/" + job_id + "/store";
  const std::string hex = strVar(env, "MEGASCALE_JOB_SECRET");
  info.secret_given = !hex.empty();
  if (info.secret_given) info.id.secret = jobSecretFromHex(hex, "launch: MEGASCALE_JOB_SECRET");
}

[[noreturn]] void noRendezvous(const LaunchInfo& info) {
  throw Error(ErrorCode::kInvalidArgument,
              "launch (" + info.launcher + "): set MEGASCALE_STORE=tcp://host:port or MASTER_ADDR and MASTER_PORT");
}

// Open MPI's mpirun URI "jobid.vpid;tcp://10.0.0.1,172.17.0.1:43211": its first address.
std::string firstHnpHost(const std::string& uri) {
  size_t start = uri.find("://");
  if (start == std::string::npos) return "";
  start += 3;
  size_t end = uri.find_first_of(",:;", start);
  return uri.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

void torchrun(const EnvLookup& env, LaunchInfo& info) {
  std::string run_id = strVar(env, "TORCHELASTIC_RUN_ID");
  const std::string job_id = run_id.empty() ? "torchrun" : run_id;
  // torch's elastic agent serves a TCPStore on MASTER_PORT itself (torch >= 1.9 static rendezvous): rank 0
  // cannot serve there, so the URL of its own store goes through the agent's.
  if (strVar(env, "MEGASCALE_STORE").empty() && isTrue(strVar(env, "TORCHELASTIC_USE_AGENT_STORE"))) {
    const std::string restart = strVar(env, "TORCHELASTIC_RESTART_COUNT");
    throughLauncher(env, info, Rendezvous::kTorchAgentStore, job_id + "." + (restart.empty() ? "0" : restart));
    info.rendezvous_host = strVar(env, "MASTER_ADDR");
    info.rendezvous_port = intVar(env, "MASTER_PORT", true);
    if (info.rendezvous_host.empty()) noRendezvous(info);
    return;
  }
  if (!fromStoreVariables(env, info, job_id)) noRendezvous(info);
}

// A store named, else under a PMIx launcher (mpirun, srun --mpi=pmix) PMIx carries the URL. False if neither.
bool storeVariablesOrPmix(const EnvLookup& env, LaunchInfo& info, const std::string& job_id) {
  if (fromStoreVariables(env, info, job_id)) return true;
  if (env("PMIX_NAMESPACE") == nullptr || env("PMIX_RANK") == nullptr) return false;
  throughLauncher(env, info, Rendezvous::kPmix, job_id);
  info.rendezvous_host = firstHnpHost(strVar(env, "OMPI_MCA_orte_hnp_uri"));
  return true;
}

// Plain srun (no PMIx, no store named): every task derives the same address, the step's first node (where task 0
// runs under every distribution but arbitrary) and a port from the job and step ids (MASTER_PORT overrides it);
// task 0 serves the store there.
void slurmDerivedStore(const EnvLookup& env, LaunchInfo& info, const SlurmJob& job, const std::string& key_space) {
  const std::string step_list = strVar(env, "SLURM_STEP_NODELIST");
  std::vector<std::string> step_nodes;
  try {
    step_nodes = step_list.empty() ? job.node_names : expandHostlist(step_list);
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("launch (slurm): SLURM_STEP_NODELIST: ") + e.what());
  }
  const std::string node_name = strVar(env, "SLURMD_NODENAME");
  if (info.rank == 0 && !step_list.empty() && !node_name.empty() && node_name != step_nodes.front()) {
    throw Error(ErrorCode::kInvalidArgument,
                "launch (slurm): task 0 runs on " + node_name + ", not on the step's first node " +
                    step_nodes.front() + ": set MEGASCALE_STORE or MASTER_ADDR and MASTER_PORT");
  }
  const int port = env("MASTER_PORT") != nullptr ? intVar(env, "MASTER_PORT", true)
                                                 : derivedStorePort(job.job_id, strVar(env, "SLURM_STEP_ID"));
  info.id.store_url = "tcp://" + step_nodes.front() + ":" + std::to_string(port);
  info.id.job_id = key_space;
  info.id.secret = jobSecret(env, key_space);
  info.hosts_store = info.rank == 0;
}

// This node's tasks in the step ("2(x3),1" at SLURM_NODEID), -1 where Slurm does not say.
int slurmStepTasksHere(const EnvLookup& env) {
  std::string layout = strVar(env, "SLURM_STEP_TASKS_PER_NODE");
  if (layout.empty()) layout = strVar(env, "SLURM_TASKS_PER_NODE");
  if (layout.empty()) return -1;
  const std::vector<int> counts = expandTasksPerNode(layout);
  const int node = std::max(0, intVar(env, "SLURM_NODEID", false));
  return node < static_cast<int>(counts.size()) ? counts[static_cast<size_t>(node)] : -1;
}

void slurm(const EnvLookup& env, LaunchInfo& info) {
  // A requeued job's runs (SLURM_RESTART_COUNT) and a job's steps each start a fresh key space.
  const std::string job = strVar(env, "SLURM_JOB_ID"), restarts = strVar(env, "SLURM_RESTART_COUNT");
  const std::string key_space = "slurm-" + (job.empty() ? std::string("job") : job) + ".r" +
                                (restarts.empty() ? std::string("0") : restarts) + "." + strVar(env, "SLURM_STEP_ID");
  if (storeVariablesOrPmix(env, info, key_space)) return;
  const std::optional<SlurmJob> slurm_job = slurmJobFromEnvironment(env);
  if (!slurm_job) noRendezvous(info);
  slurmDerivedStore(env, info, *slurm_job, key_space);
}

}  // namespace

LaunchInfo launchInfoFromEnvironment(const EnvLookup& env) {
  LaunchInfo info;
  if (env("MEGASCALE_UNIQUE_ID") != nullptr) {
    info.launcher = "megascale-run";
    info.id = UniqueId::parse(strVar(env, "MEGASCALE_UNIQUE_ID"));
    info.rank = intVar(env, "MEGASCALE_RANK", true);
    info.world_size = intVar(env, "MEGASCALE_WORLD_SIZE", true);
    info.local_rank = intVar(env, "MEGASCALE_LOCAL_RANK", false);
    info.local_size = intVar(env, "MEGASCALE_LOCAL_SIZE", false);
  } else if (env("RANK") != nullptr && env("WORLD_SIZE") != nullptr) {
    info.launcher = "torchrun";
    info.rank = intVar(env, "RANK", true);
    info.world_size = intVar(env, "WORLD_SIZE", true);
    info.local_rank = intVar(env, "LOCAL_RANK", false);
    info.local_size = intVar(env, "LOCAL_WORLD_SIZE", false);
    torchrun(env, info);
  } else if (env("SLURM_PROCID") != nullptr) {
    info.launcher = "slurm";
    info.rank = intVar(env, "SLURM_PROCID", true);
    info.world_size = intVar(env, "SLURM_NTASKS", true);
    info.local_rank = intVar(env, "SLURM_LOCALID", false);
    info.local_size = intVar(env, "SLURM_NTASKS_PER_NODE", false);
    if (info.local_size < 0) info.local_size = slurmStepTasksHere(env);
    slurm(env, info);
  } else if (env("OMPI_COMM_WORLD_RANK") != nullptr) {
    info.launcher = "openmpi";
    info.rank = intVar(env, "OMPI_COMM_WORLD_RANK", true);
    info.world_size = intVar(env, "OMPI_COMM_WORLD_SIZE", true);
    info.local_rank = intVar(env, "OMPI_COMM_WORLD_LOCAL_RANK", false);
    info.local_size = intVar(env, "OMPI_COMM_WORLD_LOCAL_SIZE", false);
    std::string job = strVar(env, "OMPI_MCA_ess_base_jobid");
    if (!storeVariablesOrPmix(env, info, "ompi-" + (job.empty() ? std::string("job") : job))) noRendezvous(info);
  } else {
    throw Error(ErrorCode::kInvalidArgument,
                "launch: no launcher environment found (start with megascale-run, torchrun, srun or mpirun)");
  }
  if (info.world_size < 1 || info.rank >= info.world_size) {
    throw Error(ErrorCode::kInvalidArgument, "launch (" + info.launcher + "): rank " + std::to_string(info.rank) +
                                                 " is not below world size " + std::to_string(info.world_size));
  }
  return info;
}

LaunchInfo launchInfoFromEnvironment() {
  return launchInfoFromEnvironment([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

}  // namespace megascale
