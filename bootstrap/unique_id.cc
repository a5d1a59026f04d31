#include "bootstrap/unique_id.h"

#include <cstdlib>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"

namespace megascale {

std::string UniqueId::serialize() const {
  std::string text = "msc1;" + store_url + ";" + job_id + ";" + toHex(secret.data(), secret.size());
  if (text.size() >= kUniqueIdBytes) {
    throw Error(ErrorCode::kInvalidArgument, "unique id is too long (" + std::to_string(text.size()) +
                                                 " bytes; store URL '" + store_url + "' too long?)");
  }
  return text;
}

UniqueId UniqueId::parse(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "malformed unique id '" + text.substr(0, 80) + "': " + why);
  };
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t semi = text.find(';', start);
    parts.push_back(text.substr(start, semi - start));
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  if (parts.size() != 4 || parts[0] != "msc1") throw bad("expected msc1;<store url>;<job id>;<secret hex>");
  UniqueId id;
  id.store_url = parts[1];
  id.job_id = parts[2];
  if (id.job_id.empty()) throw bad("empty job id");
  id.secret = jobSecretFromHex(parts[3], "malformed unique id");
  parseStoreUrl(id.store_url);  // validates
  return id;
}

UniqueId UniqueId::generate(const std::string& store_url) {
  UniqueId id;
  id.store_url = store_url;
  uint8_t job[8];
  randomBytes(job, sizeof(job));
  id.job_id = toHex(job, sizeof(job));
  id.secret.resize(32);
  randomBytes(id.secret.data(), id.secret.size());
  return id;
}

StoreAddress parseStoreUrl(const std::string& url) {
  StoreAddress addr{};
  std::string rest;
  if (url.rfind("tcp://", 0) == 0) {
    addr.scheme = StoreAddress::Scheme::kTcp;
    rest = url.substr(6);
  } else if (url.rfind("redis://", 0) == 0) {
    addr.scheme = StoreAddress::Scheme::kRedis;
    rest = url.substr(8);
  } else {
    throw Error(ErrorCode::kInvalidArgument, "store URL '" + url + "' must start with tcp:// or redis://");
  }
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw Error(ErrorCode::kInvalidArgument, "store URL '" + url + "' must be scheme://host:port");
  }
  addr.host = rest.substr(0, colon);
  char* end = nullptr;
  long port = std::strtol(rest.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535) {
    throw Error(ErrorCode::kInvalidArgument, "store URL '" + url + "' has a bad port");
  }
  addr.port = static_cast<int>(port);
  return addr;
}

}  // namespace megascale
