// The unique id: where the store is, which job this is, and the job secret that every store and peer
// connection must prove it knows. Text form "msc1;<store url>;<job id>;<secret hex>" (fits in 256 bytes).
#pragma once

#include <string>

namespace megascale {

struct UniqueId {
  std::string store_url;  // tcp://host:port or redis://host:port
  std::string job_id;     // scopes every store key
  std::string secret;     // raw bytes; never sent over the network

  std::string serialize() const;
  /// Throws Error(kInvalidArgument) explaining what is malformed.
  static UniqueId parse(const std::string& text);
  /// A new id for a store at store_url, with a fresh random job id and 32-byte secret.
  static UniqueId generate(const std::string& store_url);
};

constexpr size_t kUniqueIdBytes = 256;

struct StoreAddress {
  enum class Scheme { kTcp, kRedis };
  Scheme scheme;
  std::string host;
  int port;
};

/// Parses tcp://host:port or redis://host:port. Throws Error(kInvalidArgument).
StoreAddress parseStoreUrl(const std::string& url);

}  // namespace megascale
