#include "common/config.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/status.h"

namespace megascale {
namespace {

// Each test sets variables before reading them and restores them after; no test mutates env concurrently.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(Config, DefaultsAndOverrides) {
  unsetenv("MEGASCALE_TCP_SOCKETS");
  EXPECT_EQ(config::getInt("MEGASCALE_TCP_SOCKETS"), 2);
  ScopedEnv env("MEGASCALE_TCP_SOCKETS", "4");
  EXPECT_EQ(config::getInt("MEGASCALE_TCP_SOCKETS"), 4);
}

TEST(Config, MalformedValueNamesTheVariable) {
  ScopedEnv env("MEGASCALE_TIMEOUT_MS", "12x");
  try {
    config::timeout();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("MEGASCALE_TIMEOUT_MS"), std::string::npos);
  }
}

TEST(Config, UndeclaredKnobIsAnInternalError) {
  EXPECT_THROW(config::getInt("MEGASCALE_NO_SUCH_KNOB"), Error);
}

TEST(Config, UnknownVariablesAreReported) {
  ScopedEnv env("MEGASCALE_TIMEOUTMS", "5");  // a typo
  auto unknown = config::unknownVariables();
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), "MEGASCALE_TIMEOUTMS"), unknown.end());
}

TEST(Config, PrintConfigListsEveryKnob) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  config::printConfig(f);
  std::fclose(f);
  std::string text(buf, len);
  std::free(buf);
  for (const auto& k : config::knobs()) EXPECT_NE(text.find(k.name), std::string::npos) << k.name;
}

}  // namespace
}  // namespace megascale
