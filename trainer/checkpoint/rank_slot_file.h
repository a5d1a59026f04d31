// One slot of a rank's checkpoints in host memory (rank_checkpoint.h): a file the rank keeps mapped and rewrites
// in place at every checkpoint, so a save is one memcpy of the state (no write() through the page cache, no
// checksum pass: the two cost the main job +4.7% per step with a checkpoint every step).
//
// A torn slot is told by two generation stamps instead of a checksum: a write stores its generation at the end
// of the file first, then the header and the state, and its generation in the header last. A slot whose two
// stamps differ was being written when its writer died, or was read (copied by a replicator) while a write was
// under way: the header stamp is read before the state and the end stamp after it, so any store of a later
// write that the copy caught shows in the end stamp. Generations start at a random value per writer, so no
// stale stamp matches a new one.
//
// Layout, native byte order (the slots never leave a job's hosts, all of one kind):
//   0  "MSRANK02"       8  u32 version   12 u32 header bytes (a multiple of 4096: the state starts on a page)
//   16 u64 commit       24 u64 state bytes   32 i64 step   40 i64 data position   48 i64 optimizer steps
//   56 u64 rng[4]       88 u32 shape bytes   92 shape text
//   header bytes: the state, padded to 8 bytes; then u64 intent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/socket.h"
#include "trainer/checkpoint/checkpoint.h"

namespace megascale::trainer {

/// What a slot's header says (its state read separately).
struct RankSlotHeader {
  std::string shape;
  TrainingState state;
  int64_t optimizer_steps = 0;
  uint64_t state_bytes = 0;
};

/// A slot file mapped for writing, created or resized to fit. Throws std::runtime_error naming the file when it
/// cannot be created, sized (the memory is reserved up front: a full tmpfs is an error here, not a SIGBUS
/// later) or mapped.
class RankSlotWriter {
 public:
  RankSlotWriter(std::string path, size_t shape_bytes, uint64_t state_bytes);
  ~RankSlotWriter();
  RankSlotWriter(const RankSlotWriter&) = delete;
  RankSlotWriter& operator=(const RankSlotWriter&) = delete;

  /// Whether this mapping has room for exactly this shape and state.
  bool fits(size_t shape_bytes, uint64_t state_bytes) const;
  /// Writes one checkpoint over the slot: the pieces of state in order (their sizes must add up to the state
  /// bytes), stamped with `generation` (not 0).
  void write(uint64_t generation, const RankSlotHeader& header, const std::vector<std::string_view>& pieces);

 private:
  std::string path_;
  Fd fd_;
  size_t header_bytes_, file_bytes_;
  uint64_t state_bytes_;
  char* map_ = nullptr;
};

/// The slot's header when the slot is whole and committed (both stamps equal), else a description of what is
/// wrong ("torn: ...", "truncated: ..."), naming the file. `state`, when given, receives the state, read between
/// the two stamps.
struct RankSlotRead {
  bool intact = false;
  std::string problem;
  RankSlotHeader header;
};
RankSlotRead readRankSlot(const std::string& path, std::vector<float>* state = nullptr);

}  // namespace megascale::trainer
