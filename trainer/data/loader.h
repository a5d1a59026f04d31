// Batches of consecutive token windows, prepared on a background thread one or two steps ahead.
// A batch at position p is `batch` rows; row r is tokens [p + r*T, p + r*T + T) with targets shifted by
// one. The position advances by batch*T and wraps to 0 when the next batch would run past the end,
// so the order is a pure function of the position, which a checkpoint saves.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "trainer/data/token_store.h"

namespace megascale::trainer {

struct Batch {
  std::vector<int32_t> inputs, targets;  // [batch, seq]
  int64_t position = 0;                  // where this batch started
};

class DataLoader {
 public:
  /// Throws std::invalid_argument when the tokens cannot fill one batch (batch*seq + 1 tokens) or
  /// `position` is outside them.
  DataLoader(std::shared_ptr<const TokenStore> tokens, int64_t batch, int64_t seq, int64_t position = 0,
             int prefetch = 2);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// The next batch (waits for the prefetch thread when it is behind).
  Batch next();

  /// The position of the batch next() returns next: what a checkpoint stores.
  int64_t position() const { return next_position_; }

  /// The batch at `position` and the position after it, computed directly (used by the thread and tests).
  static Batch batchAt(std::span<const int32_t> tokens, int64_t batch, int64_t seq, int64_t position);
  static int64_t advance(int64_t tokens, int64_t batch, int64_t seq, int64_t position);

 private:
  void produce(std::stop_token stop);

  std::shared_ptr<const TokenStore> tokens_;
  const int64_t batch_, seq_;
  const size_t depth_;
  int64_t next_position_;      // consumer side
  int64_t produce_position_;   // producer side
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<Batch> ready_;
  std::jthread thread_;
};

}  // namespace megascale::trainer
