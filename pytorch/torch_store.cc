#include "pytorch/torch_store.h"

#include "common/status.h"

namespace megascale::pytorch {

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::string text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

// torch reports a store timeout as a c10::Error whose message says so; everything else is a lost store.
template <typename F>
auto translated(int rank, const char* op, const std::string& key, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    const std::string message = e.what();
    const bool timeout = message.find("imeout") != std::string::npos || message.find("imed out") != std::string::npos;
    throw Error(timeout ? ErrorCode::kTimeout : ErrorCode::kPeerLost,
                "rank " + std::to_string(rank) + ": torch.distributed store " + op + " " + key + ": " +
                    message.substr(0, message.find('\n')));
  }
}

}  // namespace

void TorchStore::set(const std::string& key, const std::string& value) {
  translated(rank_, "set", key, [&] {
    store_->set(key, bytes(value));
    return 0;
  });
}

std::string TorchStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  wait({key}, timeout);
  return translated(rank_, "get", key, [&] { return text(store_->get(key)); });
}

void TorchStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  translated(rank_, "wait", keys.empty() ? std::string() : keys.front(), [&] {
    store_->wait(keys, timeout);
    return 0;
  });
}

int64_t TorchStore::add(const std::string& key, int64_t delta) {
  return translated(rank_, "add", key, [&] { return store_->add(key, delta); });
}

std::string TorchStore::compareSet(const std::string& key, const std::string& expected, const std::string& desired) {
  return translated(rank_, "compareSet", key,
                    [&] { return text(store_->compareSet(key, bytes(expected), bytes(desired))); });
}

bool TorchStore::deleteKey(const std::string& key) {
  return translated(rank_, "delete", key, [&] { return store_->deleteKey(key); });
}

}  // namespace megascale::pytorch
