// One typed registry of every MEGASCALE_* knob: declared once (name, type, default with units, help), read
// from the environment when asked, printed by --print-config. Unknown MEGASCALE_* variables warn once.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace megascale::config {

enum class Type { kInt, kString, kBool };

struct Knob {
  const char* name;
  Type type;
  const char* default_value;
  const char* units;
  const char* category;
  const char* help;
};

/// Every knob the project reads. Adding a knob means adding a row here.
const std::vector<Knob>& knobs();

/// Value from the environment or the default. Throws Error(kInvalidArgument) on a malformed value, naming it.
int64_t getInt(const char* name);
std::string getString(const char* name);
bool getBool(const char* name);
/// True when the environment sets the knob (non-empty), so a caller's own default may apply otherwise.
bool isSet(const char* name);

/// Frequently used knobs, typed.
std::chrono::milliseconds timeout();  // MEGASCALE_TIMEOUT_MS

/// Writes "NAME=value (default, units) help" for every knob, marking values set in the environment.
void printConfig(FILE* out);

/// Names of MEGASCALE_* environment variables that no knob declares.
std::vector<std::string> unknownVariables();

/// Warns once per process about unknown MEGASCALE_* variables (typos would otherwise be silent).
void warnUnknownVariablesOnce();

}  // namespace megascale::config
