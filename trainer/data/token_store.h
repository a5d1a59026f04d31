// The run's tokens, owned by a vector (loaded here) or by a read-only mapping of a segment another rank of
// this host filled (host_data.h). Loaders read windows out of it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace megascale::trainer {

class TokenStore {
 public:
  explicit TokenStore(std::vector<int32_t> tokens) : owned_(std::move(tokens)), view_(owned_) {}
  /// Memory someone else owns; release() runs when the store goes.
  TokenStore(const int32_t* data, size_t size, std::function<void()> release)
      : view_(data, size), release_(std::move(release)) {}
  ~TokenStore() {
    if (release_) release_();
  }
  TokenStore(const TokenStore&) = delete;
  TokenStore& operator=(const TokenStore&) = delete;

  std::span<const int32_t> view() const { return view_; }
  size_t size() const { return view_.size(); }
  const int32_t* begin() const { return view_.data(); }
  const int32_t* end() const { return view_.data() + view_.size(); }

 private:
  std::vector<int32_t> owned_;
  std::span<const int32_t> view_;
  std::function<void()> release_;
};

}  // namespace megascale::trainer
