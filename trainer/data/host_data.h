// The run's data, read and tokenized once per host: the host's first rank loads it and publishes the tokens
// (with the vocabulary, the tokenizer and a description) in a POSIX shared-memory segment that the host's other
// ranks map read-only, so N ranks of a host cost one tokenization and one copy of the tokens. The segment's
// name is unlinked as soon as every rank has mapped it: nothing is left in /dev/shm, even after a crash.
#pragma once

#include <chrono>
#include <functional>

#include "collectives/communicator.h"
#include "trainer/data/training_data.h"

namespace megascale::trainer {

/// Collective over `host` (this host's ranks). Rank 0 runs load(); its failure is every rank's (same message).
TrainingData loadOncePerHost(Communicator& host, std::chrono::milliseconds timeout,
                             const std::function<TrainingData()>& load);

}  // namespace megascale::trainer
