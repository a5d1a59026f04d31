// Whole-file writes that are all-or-nothing: a temporary file in the same directory, fsync, rename over
// the target, fsync of the directory. A crash leaves the old file or the new one, never a mix.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace megascale::trainer {

/// Throws std::runtime_error with the path and errno text on failure (the temporary file is removed).
void writeFileAtomically(const std::string& path, std::string_view contents);
/// The same for a file made of `parts` in order (no copy into one buffer first).
void writeFileAtomically(const std::string& path, const std::vector<std::string_view>& parts);

}  // namespace megascale::trainer
