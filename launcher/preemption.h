// A pre-emption notice: Slurm's warning before it pre-empts a job or its time runs out (`sbatch
// --signal=B:USR1@60`, `srun --signal=USR1@60`). megascale-run does not end on it: it passes every rank the
// graceful stop (common/stop_request.h), the ranks checkpoint after their current step and exit, and under Slurm
// the job is requeued (megascale_run.cc) to resume from that checkpoint.
#pragma once

#include <signal.h>
#include <string.h>

#include <cstdio>

#include "common/stop_request.h"
#include "launcher/process_group.h"
#include "launcher/rank_watch.h"

namespace megascale::launcher {

inline bool isPreemptionNotice(int sig) { return sig == SIGUSR1 || sig == stop_request::kStopSignal; }

/// Passes the graceful stop to every rank of `group` (a rank that ignores it runs on until it ends or is killed).
inline void askRanksToStop(ProcessGroup& group, int notice, std::FILE* log) {
  group.signalAll(stop_request::kStopSignal);
  logLine(log, "pre-emption notice (%s): asked this host's ranks to checkpoint after their current step and stop",
          strsignal(notice));
}

}  // namespace megascale::launcher
