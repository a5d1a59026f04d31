#!/usr/bin/env bash
# cmake --install into a temporary prefix, then build a consumer against it twice: with find_package and
# with pkg-config, and run both.
set -euo pipefail
build_dir=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/megascale/megascale.h"
test -x "$work/prefix/bin/megascale-run"
cmake -S "$source_dir/tests/install/consumer" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/cmake-build/consumer"
libdir=$(dirname "$(find "$work/prefix" -name megascale.pc)")
export PKG_CONFIG_PATH=$libdir
cc "$source_dir/tests/install/consumer/main.c" -o "$work/pc-consumer" $(pkg-config --cflags --libs megascale)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/pc-consumer"
