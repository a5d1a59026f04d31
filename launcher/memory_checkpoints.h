// Stage 1 of the two-stage checkpoints: a directory in host memory (tmpfs) that this host's executor owns. The
// ranks write their checkpoints there (fast: no disk, no device) and a restarted rank reads them back without a
// disk read; the directory outlives every rank and goes when the job ends. Stage 2, the disk, stays the
// program's own --checkpoint-dir.
#pragma once

#include <string>

namespace megascale::launcher {

class MemoryCheckpoints {
 public:
  /// Makes an empty directory, private to this user, under /dev/shm (else $TMPDIR or /tmp, with a warning that it
  /// is not memory). Throws Error(kSystem) naming the path when it cannot.
  explicit MemoryCheckpoints(const std::string& job_id);
  ~MemoryCheckpoints();  // removes the directory and everything in it
  MemoryCheckpoints(const MemoryCheckpoints&) = delete;
  MemoryCheckpoints& operator=(const MemoryCheckpoints&) = delete;

  const std::string& path() const { return path_; }
  /// "checkpoints of 8 ranks (12.5 MiB)", or "no checkpoints yet".
  std::string describe() const;

 private:
  std::string path_;
};

}  // namespace megascale::launcher
