// Store backend on a Redis server (redis://host:port), through hiredis when the build found it.
// Redis cannot run our challenge-response, so the job secret is turned into the server's password:
// AUTH HMAC(secret, "megascale-redis-password"). The secret itself never crosses the wire; a client with
// the wrong secret is refused by AUTH and cannot read or write any key. Keys are scoped by job id.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "bootstrap/store.h"
#include "bootstrap/unique_id.h"

namespace megascale {

/// The password a redis-server for this job must be started with (--requirepass).
std::string redisPasswordFor(const UniqueId& id);

/// Throws Error(kUnavailable) when megascale was built without hiredis.
std::unique_ptr<Store> connectRedisStore(const StoreAddress& address, const UniqueId& id, const std::string& who,
                                         std::chrono::milliseconds timeout);

}  // namespace megascale
