// One training run of megascale-train: set-up (threads, GEMM choice and peak, data, model, optimizer,
// resume), the step loop with progress lines and checkpoints, and the reports at the end.
#pragma once

#include "trainer/program/train_options.h"

namespace megascale::trainer {

/// Runs to completion; returns the process exit status. Throws std::exception subclasses for set-up
/// errors (the caller prints them).
int runTraining(const TrainOptions& options);

}  // namespace megascale::trainer
