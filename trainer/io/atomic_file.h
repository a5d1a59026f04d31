// Whole-file writes that are all-or-nothing: a temporary file in the same directory, fsync, rename over
// the target, fsync of the directory. A crash leaves the old file or the new one, never a mix.
#pragma once

#include <string>
#include <string_view>

namespace megascale::trainer {

/// Throws std::runtime_error with the path and errno text on failure (the temporary file is removed).
void writeFileAtomically(const std::string& path, std::string_view contents);

}  // namespace megascale::trainer
