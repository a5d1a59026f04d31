// megascale's Store over a torch.distributed store (c10d::Store): the process group bootstraps through the store
// torch hands to a backend's creator (already scoped per group by torch's PrefixStore), so no second server,
// port or address is needed.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "bootstrap/store.h"

namespace megascale::pytorch {

class TorchStore : public Store {
 public:
  TorchStore(c10::intrusive_ptr<c10d::Store> store, int rank) : store_(std::move(store)), rank_(rank) {}

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool deleteKey(const std::string& key) override;
  std::string url() const override { return "torch.distributed store"; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
};

}  // namespace megascale::pytorch
