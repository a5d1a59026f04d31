// The ranks a launcher started on this host: spawned with their environment, their output read and
// prefixed by rank line by line, signals forwarded, and all stopped as soon as one fails.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace megascale::launcher {

struct RankProcess {
  int rank;
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  std::string out_partial;
  std::string err_partial;
  bool exited = false;
  int wait_status = 0;
};

struct GroupResult {
  int exit_code = 0;    // 0 when every rank exited 0
  std::string summary;  // names the first rank that failed and how
};

class ProcessGroup {
 public:
  /// Starts one process per rank: argv with env added to this process's environment.
  void spawn(int rank, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

  /// Relays output until all ranks exit. The first rank to fail (non-zero status or a signal) makes the
  /// others stop: SIGTERM, then SIGKILL after `grace`. A signal in `*forward_signal` is passed to all ranks.
  GroupResult run(volatile int* forward_signal, std::chrono::milliseconds grace);

 private:
  void relay(RankProcess& p, int fd, std::string& partial, bool is_err, bool eof);
  void signalAll(int sig);
  std::vector<RankProcess> ranks_;
};

/// "exited with status 3" or "was killed by signal 9 (Killed)".
std::string describeWaitStatus(int wait_status);

}  // namespace megascale::launcher
