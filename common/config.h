// One typed registry of every MEGASCALE_* knob: declared once (name, type, default with units, help), read
// from the environment when asked, printed by --print-config. Unknown MEGASCALE_* variables warn once.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
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

/// Every knob the project reads: the rows of config.cc, and those a layer above registers for itself (a
/// transport's, in its own folder).
const std::vector<Knob>& knobs();

/// A namespace-scope object of a layer above that adds its knob rows to the registry at static initialization,
/// before any is read: `const config::KnobRegistration kTcpKnobs{{"MEGASCALE_TCP_SOCKETS", ...}};`.
struct KnobRegistration {
  KnobRegistration(std::initializer_list<Knob> rows);
};

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
