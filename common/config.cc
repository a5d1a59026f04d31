#include "common/config.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/log.h"
#include "common/status.h"

extern char** environ;

namespace megascale::config {

namespace {

std::vector<Knob>& registry() {
  static std::vector<Knob> table = {
      {"MEGASCALE_TIMEOUT_MS", Type::kInt, "300000", "ms", "core",
       "deadline of every blocking wait: store, connect, collective"},
      {"MEGASCALE_DEBUG", Type::kInt, "0", "level", "core", "log level: 0 warn, 1 info, 2 debug, 3 trace (a timeline line per schedule phase)"},
      {"MEGASCALE_TRANSPORT", Type::kString, "auto", "", "transport",
       "auto (per peer: shm on the same host, else the network transport), or one transport for every peer it reaches: shm, tcp, ucx, ibverbs (ib); the NCCL plugin takes the network one"},
      {"MEGASCALE_TCP_IFADDR", Type::kString, "", "", "transport",
       "IPv4 address to listen on (default: the store's interface, else 127.0.0.1)"},
      {"MEGASCALE_NET_IF", Type::kString, "", "", "transport",
       "NCCL net plugin interfaces, NCCL_SOCKET_IFNAME syntax (prefixes, =exact, ^ excludes); default: all but lo, docker*, virbr*"},
      {"MEGASCALE_HOST_NAME", Type::kString, "", "", "topology",
       "this host's name in the cluster model (default: SLURMD_NODENAME, else the kernel's host name); emulated hosts set it"},
      {"MEGASCALE_RAILS", Type::kBool, "1", "", "topology",
       "on a host whose NICs look like rails (several, each on a subnet of its own, same speed), local rank l listens on rail l mod rails (0: the interface routed toward the store)"},
      {"MEGASCALE_TOPO_FILE", Type::kString, "", "", "topology",
       "the cluster's switch tree in Slurm topology.conf syntax (SwitchName=... Nodes=... / Switches=...)"},
      {"MEGASCALE_ALGO", Type::kString, "auto", "", "collectives",
       "algorithms asked for: NAME for every collective it implements, or COLLECTIVE:NAME entries (alltoall:bruck,allreduce:dbtree); auto, ring, pring (pipelined ring; all-reduce), rhd (recursive halving-doubling; all-reduce), direct (all-reduce), dbtree (double binary tree; all-reduce), hier (hierarchical across hosts: all-reduce, all-gather, reduce-scatter), tree (broadcast, reduce), pairwise or bruck (all-to-all), dissemination (barrier)"},
      {"MEGASCALE_NET_MBPS", Type::kInt, "0", "Mbit/s", "collectives",
       "the network link rate the algorithm cost model assumes for shapes the tuning table lacks (0: the slowest selected NIC's speed from sysfs, else 10000); bench/tune.sh prints a measured value"},
      {"MEGASCALE_NET_LATENCY_US", Type::kInt, "20", "us", "collectives",
       "the network latency per message the algorithm cost model assumes (bench/tune.sh prints a measured value)"},
      {"MEGASCALE_HOST_BLOCK", Type::kInt, "0", "ranks", "collectives",
       "the launcher's placement as data: world ranks [h*k, (h+1)*k) share host h (k = this value); the host layout then needs no exchange, nor do its splits' (0: unknown, exchanged at the first collective that needs it)"},
      {"MEGASCALE_SHM_COLLECTIVES", Type::kBool, "1", "", "collectives",
       "when all ranks share a host: all-reduce, all-gather and reduce-scatter through shared memory (0: via the transport)"},
      {"MEGASCALE_SHM_SLOT_BYTES", Type::kInt, "1048576", "bytes", "collectives",
       "per-rank shared staging slot (two per rank); larger messages move in rounds or by cross-memory attach"},
      {"MEGASCALE_SHM_ONESHOT_MAX", Type::kInt, "65536", "bytes", "collectives",
       "all-reduces whose size x (ranks - 1) is at most this are reduced by every rank from all inputs (lowest latency)"},
      {"MEGASCALE_SHM_CMA_MIN", Type::kInt, "262144", "bytes", "collectives",
       "all-reduces of at least this many bytes read peers' buffers with process_vm_readv (cross-memory attach)"},
      {"MEGASCALE_SHM_CMA_MIN_GATHER", Type::kInt, "32768", "bytes", "collectives",
       "all-gathers and reduce-scatters of at least this many bytes (all ranks' data) use cross-memory attach"},
      {"MEGASCALE_SHM_STREAM_MIN", Type::kInt, "16777216", "bytes", "collectives",
       "cross-memory reductions of at least this many bytes per rank write their output with non-temporal stores"},
      {"MEGASCALE_SHM_SPIN_NS", Type::kInt, "50000", "ns", "collectives",
       "busy-wait before sleeping on a futex (ranks <= cores; oversubscribed ranks yield instead)"},
      {"MEGASCALE_RANKS_SHARING_CORES", Type::kInt, "0", "", "collectives",
       "ranks that share this machine's cores (0: the ranks on this host); more than the cores makes waiters nap "
       "instead of yielding (set it when emulated hosts in network namespaces share one machine)"},
      {"MEGASCALE_INLINE_BYTES", Type::kInt, "65536", "bytes", "collectives",
       "shared-memory collectives up to this size run on the calling thread when nothing is queued (0: never)"},
      {"MEGASCALE_STAGING_CHUNK_BYTES", Type::kInt, "1048576", "bytes", "collectives",
       "device buffers over a transport that reads host memory only: the piece a transfer is copied through host "
       "memory in (the same on every rank)"},
      {"MEGASCALE_STAGING_SLOTS", Type::kInt, "4", "", "collectives",
       "device buffers' staging: pieces in flight per peer and direction (host staging per peer: slots x chunk)"},
      {"MEGASCALE_KERNELS", Type::kString, "auto", "", "collectives",
       "reduction kernels: auto (widest the CPU runs), avx512, avx2 or scalar"},
      {"MEGASCALE_UNIQUE_ID", Type::kString, "", "", "bootstrap",
       "the job's unique id (store URL, job id, secret); set by megascale-run"},
      {"MEGASCALE_RANK", Type::kInt, "-1", "", "bootstrap", "this process's rank; set by megascale-run"},
      {"MEGASCALE_WORLD_SIZE", Type::kInt, "-1", "", "bootstrap", "number of ranks; set by megascale-run"},
      {"MEGASCALE_LOCAL_RANK", Type::kInt, "-1", "", "bootstrap", "rank on this host; set by megascale-run"},
      {"MEGASCALE_LOCAL_SIZE", Type::kInt, "-1", "", "bootstrap", "ranks on this host; set by megascale-run"},
      {"MEGASCALE_HEARTBEAT", Type::kString, "", "", "bootstrap",
       "fd:slot of the heartbeat table this rank reports into; set by megascale-run"},
      {"MEGASCALE_FLIGHT_RECORDS", Type::kString, "", "", "bootstrap",
       "fd:slot of the flight-record table this rank records into (megascale-run reads it, even from a stopped or dead "
       "rank); set by megascale-run"},
      {"MEGASCALE_FLIGHT_RECORDER", Type::kBool, "1", "", "diagnosis",
       "keep every communicator's last 128 operations (kind, size, algorithm, state, the peer a stalled one waits for, "
       "times); dumped as JSON on SIGUSR1 (unless the program handles SIGUSR1) and after a timeout"},
      {"MEGASCALE_FLIGHT_RECORDER_DIR", Type::kString, "", "", "diagnosis",
       "where a rank writes its flight record (rank-RRRRR.json); default $TMPDIR/megascale-flight, or /tmp/...; "
       "megascale-run points it at its own run directory"},
      {"MEGASCALE_MEMORY_CHECKPOINTS", Type::kString, "", "", "bootstrap",
       "a directory in host memory (tmpfs) where ranks checkpoint and megascale-run keeps the checkpoints across "
       "restarts; set by megascale-run --max-restarts. A program keeps rank R's files under rank_RRRRR/ (5 digits): on "
       "several hosts, megascale-run replicates those to another host"},
      {"MEGASCALE_MEMORY_CHECKPOINT_SLOTS", Type::kInt, "2", "", "bootstrap",
       "checkpoints each rank keeps in host memory, overwritten in turn (>= 2); megascale-run across hosts sets 4, so "
       "that a replica on another host may lag 3 steps and still meet the others"},
      {"MEGASCALE_TEST_CORRUPT_GEMM", Type::kString, "", "", "testing",
       "test-only fault: the rank with this MEGASCALE_RANK gets wrong GEMM results (the self-check must name it)"},
      {"MEGASCALE_RESTART", Type::kInt, "0", "", "bootstrap",
       "how many times megascale-run has restarted the job's ranks (0 in the first run); set by megascale-run"},
      {"MEGASCALE_JOB_SECRET", Type::kString, "", "", "bootstrap",
       "shared job secret (hex) for torchrun/Slurm/MPI launches, where no unique id is passed"},
      {"MEGASCALE_STORE", Type::kString, "", "", "bootstrap",
       "store URL (tcp://host:port or redis://host:port) for torchrun/Slurm/MPI launches"},
      {"MEGASCALE_STORE_THREADS", Type::kInt, "0", "threads", "bootstrap",
       "event loops of the embedded store server; 0: min(4, cores)"},
      {"MEGASCALE_PROGRESS_THREADS", Type::kInt, "1", "threads", "collectives",
       "progress engines per process, shared by the communicators that only use the network; 0: a worker thread "
       "per communicator"},
  };
  return table;
}

}  // namespace

const std::vector<Knob>& knobs() { return registry(); }

KnobRegistration::KnobRegistration(std::initializer_list<Knob> rows) {
  registry().insert(registry().end(), rows.begin(), rows.end());
}

namespace {

const Knob& findKnob(const char* name) {
  for (const Knob& k : knobs()) {
    if (std::strcmp(k.name, name) == 0) return k;
  }
  throw Error(ErrorCode::kInternal, std::string("config: knob ") + name + " is not declared in the registry");
}

std::string rawValue(const Knob& knob) {
  const char* env = std::getenv(knob.name);
  return (env != nullptr && *env != '\0') ? std::string(env) : std::string(knob.default_value);
}

}  // namespace

int64_t getInt(const char* name) {
  const Knob& knob = findKnob(name);
  std::string text = rawValue(knob);
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("config: ") + name + "='" + text + "' is not an integer (" + knob.units + ")");
  }
  return value;
}

std::string getString(const char* name) { return rawValue(findKnob(name)); }

bool getBool(const char* name) {
  std::string v = rawValue(findKnob(name));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off" || v.empty()) return false;
  throw Error(ErrorCode::kInvalidArgument, std::string("config: ") + name + "='" + v + "' is not a boolean");
}

bool isSet(const char* name) {
  const char* env = std::getenv(findKnob(name).name);
  return env != nullptr && *env != '\0';
}

std::chrono::milliseconds timeout() {
  int64_t ms = getInt("MEGASCALE_TIMEOUT_MS");
  if (ms <= 0) throw Error(ErrorCode::kInvalidArgument, "config: MEGASCALE_TIMEOUT_MS must be > 0");
  return std::chrono::milliseconds(ms);
}

void printConfig(FILE* out) {
  for (const Knob& k : knobs()) {
    const char* env = std::getenv(k.name);
    bool set = env != nullptr && *env != '\0';
    std::fprintf(out, "%-26s = %-12s %s[default %s%s%s] %s\n", k.name, rawValue(k).c_str(), set ? "(set) " : "",
                 k.default_value, *k.units ? " " : "", k.units, k.help);
  }
}

std::vector<std::string> unknownVariables() {
  std::vector<std::string> unknown;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    if (entry.rfind("MEGASCALE_", 0) != 0) continue;
    std::string name = entry.substr(0, entry.find('='));
    bool declared = false;
    for (const Knob& k : knobs()) declared = declared || name == k.name;
    if (!declared) unknown.push_back(name);
  }
  return unknown;
}

void warnUnknownVariablesOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const std::string& name : unknownVariables()) {
      MSC_LOG_WARN("unknown environment variable %s ignored (see --print-config for the knobs)", name.c_str());
    }
  });
}

}  // namespace megascale::config
