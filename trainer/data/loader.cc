#include "trainer/data/loader.h"

#include <stdexcept>
#include <string>

namespace megascale::trainer {

DataLoader::DataLoader(std::shared_ptr<const TokenStore> tokens, int64_t batch, int64_t seq, int64_t position,
                       int prefetch)
    : tokens_(std::move(tokens)),
      batch_(batch),
      seq_(seq),
      depth_(static_cast<size_t>(std::max(1, prefetch))),
      next_position_(position),
      produce_position_(position) {
  const auto have = static_cast<int64_t>(tokens_->size());
  if (batch < 1 || seq < 1 || have < batch * seq + 1) {
    throw std::invalid_argument("the data has " + std::to_string(have) + " tokens; a batch of " +
                                std::to_string(batch) + " x " + std::to_string(seq) + " needs at least " +
                                std::to_string(batch * seq + 1));
  }
  if (position < 0 || position + batch * seq + 1 > have) {
    throw std::invalid_argument("data position " + std::to_string(position) + " is outside the " +
                                std::to_string(have) + " tokens (a checkpoint from other data?)");
  }
  thread_ = std::jthread([this](std::stop_token stop) { produce(stop); });
}

DataLoader::~DataLoader() {
  thread_.request_stop();
  changed_.notify_all();
}

int64_t DataLoader::advance(int64_t tokens, int64_t batch, int64_t seq, int64_t position) {
  const int64_t next = position + batch * seq;
  return next + batch * seq + 1 > tokens ? 0 : next;
}

Batch DataLoader::batchAt(std::span<const int32_t> tokens, int64_t batch, int64_t seq, int64_t position) {
  Batch b;
  b.position = position;
  b.inputs.assign(tokens.begin() + position, tokens.begin() + position + batch * seq);
  b.targets.assign(tokens.begin() + position + 1, tokens.begin() + position + batch * seq + 1);
  return b;
}

void DataLoader::produce(std::stop_token stop) {
  while (!stop.stop_requested()) {
    Batch b = batchAt(tokens_->view(), batch_, seq_, produce_position_);
    produce_position_ = advance(static_cast<int64_t>(tokens_->size()), batch_, seq_, produce_position_);
    std::unique_lock lock(mutex_);
    if (!changed_.wait(lock, stop, [&] { return ready_.size() < depth_; })) return;
    ready_.push_back(std::move(b));
    changed_.notify_all();
  }
}

Batch DataLoader::next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty(); });
  Batch b = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();
  next_position_ = advance(static_cast<int64_t>(tokens_->size()), batch_, seq_, b.position);
  return b;
}

}  // namespace megascale::trainer
