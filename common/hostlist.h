// Slurm's hostlist expressions, as topology.conf and SLURM_JOB_NODELIST write them: "node[01-03,07],gpu5".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace megascale {

/// The names an expression stands for, in its order: "n[1-3]" -> n1 n2 n3; a range keeps the width of its
/// first bound ("n[08-10]" -> n08 n09 n10); several brackets multiply ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2).
/// Throws std::invalid_argument naming the expression for unbalanced brackets, empty names, a reversed range
/// or more than 1,000,000 names.
std::vector<std::string> expandHostlist(std::string_view expression);

}  // namespace megascale
