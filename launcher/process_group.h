// The ranks a launcher started on this host: spawned with their environment, their output read and prefixed by
// rank line by line, their ends reaped. What to do when one fails is the job driver's (launcher/job_driver.h).
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

class ProcessGroup {
 public:
  ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  ~ProcessGroup();  // kills and reaps ranks still running

  /// Starts one process per rank: argv with env added to this process's environment.
  void spawn(int rank, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

  /// Relays output for up to `wait` and reaps the ranks that ended meanwhile; returns their indices in
  /// ranks(), in the order they were reaped.
  std::vector<size_t> pump(std::chrono::milliseconds wait);

  void signalAll(int sig);
  void signal(size_t index, int sig);
  /// SIGTERM to every rank still running, SIGKILL after `grace`, relaying output until all have ended.
  void stop(std::chrono::milliseconds grace);

  /// Relays what the ended ranks (and anything they left running) still write, for up to `limit`.
  void drain(std::chrono::milliseconds limit);

  size_t alive() const { return alive_; }
  const std::vector<RankProcess>& ranks() const { return ranks_; }

 private:
  void relay(RankProcess& p, int fd, std::string& partial, bool is_err, bool eof);
  std::vector<RankProcess> ranks_;
  size_t alive_ = 0;
};

/// "exited with status 3" or "was killed by signal 9 (Killed)".
std::string describeWaitStatus(int wait_status);
/// True for a wait status other than exit status 0.
bool failed(int wait_status);

}  // namespace megascale::launcher
