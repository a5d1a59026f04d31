#include "collectives/bootstrap/store.h"

#include "collectives/bootstrap/redis_store.h"
#include "collectives/bootstrap/tcp_store_client.h"
#include "collectives/bootstrap/unique_id.h"

namespace megascale {

std::unique_ptr<Store> connectStore(const UniqueId& id, const std::string& who, std::chrono::milliseconds timeout) {
  StoreAddress address = parseStoreUrl(id.store_url);
  if (address.scheme == StoreAddress::Scheme::kRedis) return connectRedisStore(address, id, who, timeout);
  return std::make_unique<TcpStoreClient>(address, id, who, timeout);
}

}  // namespace megascale
