#include "bootstrap/slurm_job.h"

#include <cstdlib>
#include <numeric>
#include <stdexcept>

#include "common/hostlist.h"
#include "common/status.h"

namespace megascale {

namespace {

constexpr int kMaxTasks = 1 << 24;

[[noreturn]] void malformed(const std::string& what) { throw Error(ErrorCode::kInvalidArgument, "slurm: " + what); }

int parseCount(std::string_view text, const std::string& what) {
  const std::string s(text);
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 0 || v > kMaxTasks) malformed(what + " '" + s + "' is not a valid count");
  return static_cast<int>(v);
}

std::string var(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v != nullptr ? std::string(v) : std::string();
}

// The first of several variables that is set (Slurm renamed some: SLURM_NODELIST became SLURM_JOB_NODELIST).
std::string firstSet(const EnvLookup& env, std::initializer_list<const char*> names, const char** which) {
  for (const char* name : names) {
    std::string v = var(env, name);
    if (!v.empty()) {
      *which = name;
      return v;
    }
  }
  *which = *names.begin();
  return "";
}

}  // namespace

int SlurmJob::totalTasks() const { return std::accumulate(tasks_per_node.begin(), tasks_per_node.end(), 0); }

int SlurmJob::tasksBefore(int node) const {
  return std::accumulate(tasks_per_node.begin(), tasks_per_node.begin() + node, 0);
}

std::string SlurmJob::keySpace() const { return "slurm-" + job_id + ".r" + std::to_string(restart_count); }

std::vector<int> expandTasksPerNode(std::string_view text) {
  std::vector<int> counts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const size_t paren = item.find("(x");
    int count = 0, repeat = 1;
    if (paren == std::string_view::npos) {
      count = parseCount(item, "SLURM_TASKS_PER_NODE item");
    } else {
      if (item.back() != ')') malformed("SLURM_TASKS_PER_NODE item '" + std::string(item) + "' lacks its ')'");
      count = parseCount(item.substr(0, paren), "SLURM_TASKS_PER_NODE count");
      repeat = parseCount(item.substr(paren + 2, item.size() - paren - 3), "SLURM_TASKS_PER_NODE repeat");
    }
    if (static_cast<int64_t>(counts.size()) + repeat > kMaxTasks) malformed("SLURM_TASKS_PER_NODE names too many nodes");
    counts.insert(counts.end(), static_cast<size_t>(repeat), count);
    start = comma + 1;
  }
  return counts;
}

int derivedStorePort(std::string_view job_id, std::string_view step_id) {
  // FNV-1a: the same on every node and build, unlike std::hash.
  uint64_t h = 1469598103934665603ull;
  for (std::string_view part : {job_id, std::string_view("."), step_id}) {
    for (char c : part) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  return 15000 + static_cast<int>(h % 10000);
}

std::optional<SlurmJob> slurmJobFromEnvironment(const EnvLookup& env) {
  SlurmJob job;
  const char* job_var = nullptr;
  job.job_id = firstSet(env, {"SLURM_JOB_ID", "SLURM_JOBID"}, &job_var);
  if (job.job_id.empty()) return std::nullopt;
  job.step_id = var(env, "SLURM_STEP_ID");
  const std::string restarts = var(env, "SLURM_RESTART_COUNT");
  job.restart_count = restarts.empty() ? 0 : parseCount(restarts, "SLURM_RESTART_COUNT");

  const char* list_var = nullptr;
  const std::string list = firstSet(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}, &list_var);
  try {
    job.node_names = expandHostlist(list);
  } catch (const std::invalid_argument& e) {
    malformed(std::string(list_var) + ": " + e.what());
  }
  if (job.node_names.empty()) malformed("SLURM_JOB_NODELIST is not set in job " + job.job_id);
  const char* nodes_var = nullptr;
  const std::string nodes = firstSet(env, {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}, &nodes_var);
  if (!nodes.empty() && parseCount(nodes, nodes_var) != job.nodes()) {
    malformed(std::string(nodes_var) + "=" + nodes + " but " + list_var + " '" + list + "' names " +
              std::to_string(job.nodes()) + " nodes");
  }
  const std::string node_id = var(env, "SLURM_NODEID");
  job.node_id = node_id.empty() ? 0 : parseCount(node_id, "SLURM_NODEID");
  if (job.node_id >= job.nodes()) {
    malformed("SLURM_NODEID " + node_id + " is not below the job's " + std::to_string(job.nodes()) + " nodes");
  }

  const std::string per_node = var(env, "SLURM_NTASKS_PER_NODE");
  if (!per_node.empty()) {
    job.tasks_per_node.assign(static_cast<size_t>(job.nodes()), parseCount(per_node, "SLURM_NTASKS_PER_NODE"));
  } else {
    const std::string layout = var(env, "SLURM_TASKS_PER_NODE");
    job.tasks_per_node = layout.empty() ? std::vector<int>(static_cast<size_t>(job.nodes()), 1)
                                        : expandTasksPerNode(layout);
    if (static_cast<int>(job.tasks_per_node.size()) != job.nodes()) {
      malformed("SLURM_TASKS_PER_NODE '" + layout + "' counts " + std::to_string(job.tasks_per_node.size()) +
                " nodes but the job has " + std::to_string(job.nodes()));
    }
  }
  return job;
}

}  // namespace megascale
