// Stage 1 of the two-stage checkpoints: a directory in host memory (tmpfs) that this host's executor owns. The
// ranks write their checkpoints there (fast: no disk, no device) and a restarted rank reads them back without a
// disk read; the directory outlives every rank and goes when the job ends. Stage 2, the disk, stays the
// program's own --checkpoint-dir.
//
// An executor killed with SIGKILL cannot remove its directory, and tmpfs holds it until a reboot. So each
// directory carries an `.owner` file that its executor holds locked (flock) while it lives; the kernel drops the
// lock when the process dies however it dies, and every new MemoryCheckpoints first removes the directories of
// this user whose owner is gone.
#pragma once

#include <string>

namespace megascale::launcher {

class MemoryCheckpoints {
 public:
  /// Makes an empty directory, private to this user, under /dev/shm (else $TMPDIR or /tmp, with a warning that it
  /// is not memory), after removing the ones there whose owner died. Throws Error(kSystem) naming the path when
  /// it cannot.
  explicit MemoryCheckpoints(const std::string& job_id);
  ~MemoryCheckpoints();  // removes the directory and everything in it
  MemoryCheckpoints(const MemoryCheckpoints&) = delete;
  MemoryCheckpoints& operator=(const MemoryCheckpoints&) = delete;

  const std::string& path() const { return path_; }
  /// "checkpoints of 8 ranks (12.5 MiB)", or "no checkpoints yet".
  std::string describe() const;

  /// Removes the directories under `base` made by a MemoryCheckpoints whose process has died; how many.
  static int removeOrphans(const std::string& base);

 private:
  std::string path_;
  int owner_fd_ = -1;  // holds the lock on path_/.owner
};

}  // namespace megascale::launcher
