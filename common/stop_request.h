// A graceful stop, asked of a program by a signal: a job about to be pre-empted (Slurm's `--signal`) checkpoints
// and ends cleanly instead of losing the work since its last checkpoint. megascale-run turns its own pre-emption
// notice (SIGUSR1, or SIGUSR2) into kStopSignal for every rank; ranks started by srun get it from Slurm directly
// (`srun --signal=USR2@60`). SIGUSR1 stays the flight recorder's.
#pragma once

#include <csignal>

namespace megascale::stop_request {

constexpr int kStopSignal = SIGUSR2;

/// Installs the handler of kStopSignal (idempotent); from then on requested() turns true once it arrives.
void install();
/// Whether the stop signal has arrived since install(). Async-signal-safe to set, cheap to read.
bool requested();

}  // namespace megascale::stop_request
