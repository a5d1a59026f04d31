// Libraries megascale opens at run time (libibverbs, libucp, libcuda), as NCCL does: libmegascale then loads
// on machines without them, and says what is missing when a transport needs one.
#pragma once

#include <dlfcn.h>

#include <string>

namespace megascale {

/// Opens `name` for the life of the process (never closed: these libraries do not support being unloaded).
/// Null when it cannot be opened; *why then says so.
inline void* openLibrary(const char* name, std::string* why) {
  void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    *why = std::string("cannot open ") + name + " (" + (error != nullptr ? error : "unknown") + ")";
  }
  return library;
}

/// Looks `name` up into *slot. When it is absent and `missing` is not null, the first absent name goes there.
template <typename F>
void bindSymbol(void* library, const char* name, F* slot, std::string* missing) {
  *slot = reinterpret_cast<F>(dlsym(library, name));
  if (*slot == nullptr && missing != nullptr && missing->empty()) *missing = name;
}

}  // namespace megascale
