// Where a rank's checkpoints in host memory live under MEGASCALE_MEMORY_CHECKPOINTS: written by the trainer
// (trainer/checkpoint/rank_checkpoint.h), replicated and fetched by name by the executors (launcher/), so both
// sides take the name from here.
#pragma once

#include <cstdio>
#include <string>

namespace megascale {

/// "rank_00012": the directory of rank 12's checkpoint slots.
inline std::string rankCheckpointDirName(int rank) {
  char name[32];
  std::snprintf(name, sizeof(name), "rank_%05d", rank);
  return name;
}

}  // namespace megascale
