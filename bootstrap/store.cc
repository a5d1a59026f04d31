#include "bootstrap/store.h"

#include "bootstrap/redis_store.h"
#include "bootstrap/tcp_store_client.h"
#include "bootstrap/unique_id.h"
#include "common/socket.h"

#include <algorithm>

namespace megascale {

void Store::multiSet(const std::vector<std::pair<std::string, std::string>>& pairs) {
  for (const auto& [key, value] : pairs) set(key, value);
}

std::vector<std::string> Store::multiGet(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const Deadline deadline = deadlineAfter(timeout);
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (const std::string& key : keys) {
    values.push_back(get(key, std::chrono::milliseconds(std::max(1, msUntil(deadline)))));
  }
  return values;
}

std::unique_ptr<Store> connectStore(const UniqueId& id, const std::string& who, std::chrono::milliseconds timeout) {
  StoreAddress address = parseStoreUrl(id.store_url);
  if (address.scheme == StoreAddress::Scheme::kRedis) return connectRedisStore(address, id, who, timeout);
  return std::make_unique<TcpStoreClient>(address, id, who, timeout);
}

}  // namespace megascale
