// megascale-run: starts N local ranks of a program with MEGASCALE_* set, serving the job's store itself
// unless --store names one, and drives them (launcher/job_driver.h): faults detected, ranks restarted. On several
// hosts, run it once per host with --world-size and --rank-offset (for example from srun or mpirun, one task per host)
// and a shared --store; with --max-restarts or --spare-hosts the hosts' megascale-run become executors that one
// of them drives through the store (launcher/host_executor.h). Under a Slurm allocation it takes all of that from
// SLURM_* (launcher/slurm_launch.h), and a pre-emption notice (SIGUSR1) checkpoints, stops and requeues the job.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include "bootstrap/tcp_store_server.h"
#include "bootstrap/unique_id.h"
#include "common/config.h"
#include "common/crypto.h"
#include "launcher/host_executor.h"
#include "launcher/job_driver.h"
#include "launcher/print_topology.h"
#include "launcher/slurm_launch.h"
#include "launcher/status_table.h"

namespace {

volatile int g_signal = 0;
volatile sig_atomic_t g_preempted = 0;
void onSignal(int sig) { g_signal = sig; }
void onPreemptionNotice(int sig) {
  g_preempted = 1;
  g_signal = sig;
}

void usage(FILE* out) {
  std::fprintf(
      out,
      "usage: megascale-run -n N [options] program [args...]\n"
      "  -n, --nproc N        ranks to start on this host (under Slurm: default the node's tasks)\n"
      "  --store URL          use this store (tcp://host:port or redis://host:port) instead of serving one;\n"
      "                       MEGASCALE_JOB_SECRET (hex) must hold the job secret\n"
      "  --world-size W       total ranks over all hosts (default N)\n"
      "  --rank-offset R      global rank of this host's first rank (default 0)\n"
      "  --job-id ID          job id shared by all hosts (default: random; required with --world-size)\n"
      "  --grace-ms MS        after a rank fails, time the others get before SIGKILL (default 3000)\n"
      "  --max-restarts N     after a fault, stop every rank and start them all again, up to N times; the\n"
      "                       program resumes from its latest checkpoint (default 0: the job ends)\n"
      "  --heartbeat-ms MS    how often the ranks' heartbeats are read (default 500)\n"
      "  --hang-timeout S     a rank that makes no progress for S seconds while others wait hangs (default 0:\n"
      "                       not watched)\n"
      "  --stopped-timeout S  with --hang-timeout: a rank stopped by a signal (SIGSTOP, SIGTSTP) for S seconds\n"
      "                       hangs, without waiting out the hang timeout (default 1; 0: the hang timeout)\n"
      "  --self-check         after a fault, run megascale-selfcheck on each host's ranks before restarting;\n"
      "                       a host that fails it is evicted (with no spare host, the job stops)\n"
      "  --spare-hosts K      across hosts: K more hosts' megascale-run join as spares (without --rank-offset,\n"
      "                       hosts take slots in the order they join); an evicted host's slot goes to a spare\n"
      "  --host-timeout S     across hosts with restarts: a host whose megascale-run is silent for S seconds is\n"
      "                       lost (its ranks are restarted elsewhere), and a megascale-run that cannot reach the\n"
      "                       store or the driver for S seconds stops its ranks (default 10)\n"
      "  --diagnosis-dir DIR  where the job's live status and flight records go: the driver's dump of every\n"
      "                       rank at a fault (restart-N/, read by megascale-diagnose) and the ranks' own\n"
      "                       dumps (flight/) (default ${TMPDIR:-/tmp}/megascale-jobs/JOB_ID)\n"
      "  --status [JOB]       print the status of a running job (a job id or its diagnosis directory; default:\n"
      "                       every job running here): per rank its step, the operation it is in and for how\n"
      "                       long, how long since it made progress, its transport errors\n"
      "  --print-config       print every MEGASCALE_* knob with its value and exit\n"
      "  --print-topology     print the cluster model (hosts, ranks, NICs per rail, switches) and exit; with\n"
      "                       --store, every host's megascale-run prints the whole cluster\n"
      "  --topology FILE      the switch tree in Slurm topology.conf syntax (default MEGASCALE_TOPO_FILE)\n"
      "\n"
      "Under a Slurm allocation (SLURM_JOB_ID set, no --world-size or --store), run one megascale-run per node\n"
      "(srun -N NODES -n NODES, or the batch script on one node): the world size, this node's rank offset, its\n"
      "ranks (SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE unless -n says) and the job id (SLURM_JOB_ID and\n"
      "SLURM_RESTART_COUNT) come from Slurm; across nodes node 0 serves the store on the first node of\n"
      "SLURM_JOB_NODELIST and MEGASCALE_JOB_SECRET must hold the job secret.\n"
      "  --no-slurm           ignore the Slurm allocation\n"
      "SIGUSR1 (sbatch --signal=B:USR1@60) is a pre-emption notice: every rank gets SIGUSR2, megascale-train\n"
      "checkpoints after its current step and stops, and under Slurm node 0 requeues the job (scontrol requeue),\n"
      "whose next run resumes from that checkpoint.\n"
      "  --no-requeue         after a pre-emption notice, end without requeueing the job\n");
}

int parseCount(const char* flag, const char* text, int min) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < min || v > (1 << 20)) {
    std::fprintf(stderr, "megascale-run: %s '%s' must be an integer >= %d\n", flag, text, min);
    std::exit(2);
  }
  return static_cast<int>(v);
}

double parseSeconds(const char* flag, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (*end != '\0' || !(v >= 0) || v > 1e6) {
    std::fprintf(stderr, "megascale-run: %s '%s' must be a number of seconds >= 0\n", flag, text);
    std::exit(2);
  }
  return v;
}

// A program installed beside megascale-run (the same build or bin directory), else found on PATH.
std::string siblingProgram(const std::string& name) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string path(self, static_cast<size_t>(n));
    path = path.substr(0, path.rfind('/') + 1) + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return name;
}

// The store this megascale-run serves for the other nodes of a Slurm job outlives its own ranks: the other nodes'
// megascale-run and ranks still read the job's end from it. It stays up until they have all hung up, or `limit`.
void serveUntilIdle(const megascale::TcpStoreServer& server, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (server.connectionCount() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace megascale;
  int nproc = -1, world_size = -1, rank_offset = 0, grace_ms = 3000, max_restarts = 0, heartbeat_ms = 500;
  double hang_timeout_s = 0, stopped_timeout_s = 1, host_timeout_s = 10;
  int spare_hosts = 0;
  bool rank_offset_given = false;
  bool self_check = false;
  std::string store_url, job_id, topology_file = config::getString("MEGASCALE_TOPO_FILE");
  bool print_topology = false, use_slurm = true, requeue = true;
  std::string diagnosis_dir;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "megascale-run: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-n" || a == "--nproc" || a == "-np")
      nproc = parseCount("-n", value("-n"), 1);
    else if (a == "--store")
      store_url = value("--store");
    else if (a == "--world-size")
      world_size = parseCount("--world-size", value("--world-size"), 1);
    else if (a == "--rank-offset") {
      rank_offset = parseCount("--rank-offset", value("--rank-offset"), 0);
      rank_offset_given = true;
    } else if (a == "--spare-hosts")
      spare_hosts = parseCount("--spare-hosts", value("--spare-hosts"), 0);
    else if (a == "--host-timeout")
      host_timeout_s = parseSeconds("--host-timeout", value("--host-timeout"));
    else if (a == "--job-id")
      job_id = value("--job-id");
    else if (a == "--grace-ms")
      grace_ms = parseCount("--grace-ms", value("--grace-ms"), 0);
    else if (a == "--max-restarts")
      max_restarts = parseCount("--max-restarts", value("--max-restarts"), 0);
    else if (a == "--heartbeat-ms")
      heartbeat_ms = parseCount("--heartbeat-ms", value("--heartbeat-ms"), 1);
    else if (a == "--hang-timeout")
      hang_timeout_s = parseSeconds("--hang-timeout", value("--hang-timeout"));
    else if (a == "--stopped-timeout")
      stopped_timeout_s = parseSeconds("--stopped-timeout", value("--stopped-timeout"));
    else if (a == "--self-check")
      self_check = true;
    else if (a == "--diagnosis-dir")
      diagnosis_dir = value("--diagnosis-dir");
    else if (a == "--status") {
      const bool named = i + 1 < argc && argv[i + 1][0] != '-';
      return launcher::printStatus(named ? argv[i + 1] : "", stdout);
    }
    else if (a == "--topology")
      topology_file = value("--topology");
    else if (a == "--print-topology")
      print_topology = true;
    else if (a == "--no-slurm")
      use_slurm = false;
    else if (a == "--no-requeue")
      requeue = false;
    else if (a == "--print-config") {
      config::printConfig(stdout);
      return 0;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--") {
      ++i;
      break;
    } else if (a.rfind("-", 0) == 0) {
      std::fprintf(stderr, "megascale-run: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    } else {
      break;
    }
  }
  // Under Slurm the allocation says what --world-size, --rank-offset, --job-id and --store would.
  std::optional<SlurmJob> slurm_job;
  std::optional<launcher::SlurmHostShare> slurm;
  if (use_slurm && world_size < 0 && store_url.empty()) {
    try {
      slurm_job = slurmJobFromEnvironment([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
      if (slurm_job) slurm = launcher::slurmHostShare(*slurm_job, nproc);
    } catch (const Error& e) {
      std::fprintf(stderr, "megascale-run: %s (--no-slurm ignores the allocation)\n", e.what());
      return 2;
    }
  }
  if (slurm) {
    nproc = slurm->nproc;
    world_size = slurm->world_size;
    rank_offset = slurm->rank_offset;
    rank_offset_given = true;
    store_url = slurm->store_url;
    if (job_id.empty()) job_id = slurm->job_id;
    std::fprintf(stderr, "megascale-run: %s\n", slurm->describe(*slurm_job).c_str());
  }
  if (print_topology && nproc < 1) nproc = 1;
  if (nproc < 1 || (i >= argc && !print_topology)) {
    usage(stderr);
    return 2;
  }
  if (world_size < 0) world_size = nproc;
  if (rank_offset + nproc > world_size) {
    std::fprintf(stderr, "megascale-run: ranks %d..%d exceed --world-size %d\n", rank_offset, rank_offset + nproc - 1,
                 world_size);
    return 2;
  }
  // Across hosts, restarts and spares need the hosts' executors to agree through the store.
  const bool cluster = world_size != nproc && (max_restarts > 0 || spare_hosts > 0);
  if (cluster && (world_size % nproc != 0 || rank_offset % nproc != 0)) {
    std::fprintf(stderr,
                 "megascale-run: --max-restarts and --spare-hosts across hosts need every host to start the same "
                 "number of ranks: --world-size %d and --rank-offset %d must be multiples of -n %d\n",
                 world_size, rank_offset, nproc);
    return 2;
  }
  if (spare_hosts > 0 && world_size == nproc) {
    std::fprintf(stderr, "megascale-run: --spare-hosts needs a job across hosts (--world-size and --store)\n");
    return 2;
  }
  if (cluster && host_timeout_s < 0.001) {
    std::fprintf(stderr, "megascale-run: --host-timeout must be > 0\n");
    return 2;
  }
  std::unique_ptr<TcpStoreServer> server;
  UniqueId id;
  try {
    if (store_url.empty()) {
      if (world_size != nproc) {
        std::fprintf(stderr, "megascale-run: --world-size across hosts needs a shared --store\n");
        return 2;
      }
      server = startLoopbackStore(&id);
    } else {
      const std::string secret_hex = config::getString("MEGASCALE_JOB_SECRET");
      if (secret_hex.empty()) {
        std::fprintf(stderr, slurm ? "megascale-run: the nodes of a Slurm job share a job secret: export "
                                     "MEGASCALE_JOB_SECRET=$(openssl rand -hex 32) in the batch script, before srun\n"
                                   : "megascale-run: --store needs MEGASCALE_JOB_SECRET set to the job secret "
                                     "(>= 16 bytes hex)\n");
        return 2;
      }
      id.secret = jobSecretFromHex(secret_hex, "MEGASCALE_JOB_SECRET");
      if (job_id.empty() && world_size != nproc) {
        std::fprintf(stderr, "megascale-run: several hosts need the same --job-id\n");
        return 2;
      }
      id.store_url = store_url;
      id.job_id = job_id.empty() ? UniqueId::generate(store_url).job_id : job_id;
      const StoreAddress address = parseStoreUrl(store_url);
      if (slurm && slurm->serves_store) {
        TcpStoreServer::Options serve;
        serve.port = address.port;
        serve.secret = id.secret;
        server = std::make_unique<TcpStoreServer>(serve);
        server->start();
      }
    }
    if (!job_id.empty()) id.job_id = job_id;
  } catch (const Error& e) {
    std::fprintf(stderr, "megascale-run: %s\n", e.what());
    return 2;
  }

  if (print_topology) {
    try {
      launcher::TopologyQuery query{
          nproc, world_size, rank_offset, topology_file, store_url.empty() ? nullptr : &id, config::timeout()};
      std::fputs(launcher::describeCluster(query).c_str(), stdout);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "megascale-run --print-topology: %s\n", e.what());
      return 1;
    }
  }

  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  struct sigaction notice {};
  notice.sa_handler = onPreemptionNotice;
  sigaction(SIGUSR1, &notice, nullptr);
  sigaction(SIGUSR2, &notice, nullptr);
  // After a pre-emption notice the ranks have checkpointed and stopped: node 0 puts the job back in the queue.
  const auto finish = [&](int code) {
    if (server && slurm && slurm->serves_store) {
      serveUntilIdle(*server, std::chrono::milliseconds(static_cast<int64_t>(host_timeout_s * 1000)));
    }
    if (!g_preempted || !slurm_job || !requeue || slurm_job->node_id != 0) return code;
    const std::string failed = launcher::requeueSlurmJob(slurm_job->job_id);
    if (!failed.empty()) {
      std::fprintf(stderr, "megascale-run: pre-empted, but %s\n", failed.c_str());
      return code != 0 ? code : 1;
    }
    std::fprintf(stderr, "megascale-run: pre-empted: requeued Slurm job %s; its next run resumes from the checkpoint\n",
                 slurm_job->job_id.c_str());
    return code;
  };

  if (cluster) {
    launcher::ExecutorOptions executor;
    launcher::ClusterOptions& c = executor.cluster;
    c.nproc = nproc;
    c.world_size = world_size;
    c.spare_hosts = spare_hosts;
    c.max_restarts = max_restarts;
    c.self_check = self_check;
    c.heartbeat = std::chrono::milliseconds(heartbeat_ms);
    c.hang_timeout = std::chrono::milliseconds(static_cast<int64_t>(hang_timeout_s * 1000));
    c.stopped_timeout = std::chrono::milliseconds(static_cast<int64_t>(stopped_timeout_s * 1000));
    c.host_timeout = std::chrono::milliseconds(static_cast<int64_t>(host_timeout_s * 1000));
    c.join_timeout = config::timeout();
    c.stop_timeout = std::chrono::milliseconds(grace_ms);
    c.topology_file = topology_file;
    executor.preferred_slot = rank_offset_given ? rank_offset / nproc : -1;
    executor.program.assign(argv + i, argv + argc);
    executor.id = id;
    if (self_check) executor.self_check_program = siblingProgram("megascale-selfcheck");
    try {
      return finish(launcher::runHostExecutor(executor, stderr, &g_signal));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "megascale-run: %s\n", e.what());
      return 1;
    }
  }

  launcher::DriverOptions driver;
  driver.nproc = nproc;
  driver.world_size = world_size;
  driver.rank_offset = rank_offset;
  driver.program.assign(argv + i, argv + argc);
  driver.id = id;
  driver.grace = std::chrono::milliseconds(grace_ms);
  driver.max_restarts = max_restarts;
  driver.heartbeat = std::chrono::milliseconds(heartbeat_ms);
  driver.hang_timeout = std::chrono::milliseconds(static_cast<int64_t>(hang_timeout_s * 1000));
  driver.stopped_timeout = std::chrono::milliseconds(static_cast<int64_t>(stopped_timeout_s * 1000));
  if (self_check) driver.self_check_program = siblingProgram("megascale-selfcheck");
  driver.diagnosis_dir = diagnosis_dir;
  try {
    launcher::JobDriver job(driver, stderr);
    launcher::DriverResult result = job.run(&g_signal);
    if (result.exit_code != 0) std::fprintf(stderr, "megascale-run: %s\n", result.summary.c_str());
    return finish(result.exit_code);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megascale-run: %s\n", e.what());
    return 1;
  }
}
