#!/usr/bin/env bash
# The Debian package as a cluster operator gets it: cpack -G DEB in the build tree makes
# megascale_<version>_amd64.deb; dpkg-deb --info names only what every run links as Depends and what is opened at
# run time as Recommends; the package holds the library, headers, CMake package, pkg-config file, NCCL plugin,
# tools and PyTorch module; unpacked into a throwaway root (dpkg -x), its megascale-run starts 2 ranks of its
# all_reduce_perf with no LD_LIBRARY_PATH and every element is right.
set -euo pipefail
build_dir=$1 version=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$build_dir" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack -G DEB"; }
deb=$work/pkg/megascale_${version}_amd64.deb
[ -f "$deb" ] || fail "no $(basename "$deb") in $(ls "$work/pkg")"

info=$(dpkg-deb --info "$deb")
depends=$(sed -n 's/^ Depends: //p' <<<"$info")
recommends=$(sed -n 's/^ Recommends: //p' <<<"$info")
echo "Depends: $depends"
echo "Recommends: $recommends"
for needed in libc6 libssl3 libstdc++6; do
  grep -q "\b$needed\b" <<<"$depends" || fail "Depends lacks $needed"
done
for optional in libibverbs1 libucx0 librte-eal23 python3-torch; do
  grep -q "\b$optional\b" <<<"$depends" && fail "Depends names $optional, which only some runs open"
  grep -q "\b$optional\b" <<<"$recommends" || fail "Recommends lacks $optional"
done
grep -qi "cuda\|libtorch" <<<"$depends" && fail "Depends names CUDA or libtorch"

contents=$(dpkg-deb --contents "$deb" | awk '{print $6}')
for path in ./usr/lib/libmegascale.so.0 ./usr/include/megascale/megascale.h ./usr/lib/cmake/megascale/megascaleConfig.cmake \
            ./usr/lib/pkgconfig/megascale.pc ./usr/lib/libnccl-net-megascale.so ./usr/bin/megascale-run \
            ./usr/bin/megascale-train ./usr/bin/all_reduce_perf ./usr/lib/python3/dist-packages/megascale_torch/__init__.py; do
  grep -qxF "$path" <<<"$contents" || fail "the package lacks $path"
done
grep -q '^./usr/lib/python3/dist-packages/megascale_torch/_C.*\.so$' <<<"$contents" || fail "the package lacks the PyTorch module"

root=$work/root
dpkg -x "$deb" "$root"
out=$(env -u LD_LIBRARY_PATH MEGASCALE_TIMEOUT_MS=60000 "$root/usr/bin/megascale-run" -n 2 "$root/usr/bin/all_reduce_perf" \
        -b 8 -e 1M -f 16 -c 1 2>&1) || { echo "$out"; fail "the unpacked megascale-run -n 2 all_reduce_perf"; }
grep -q "# Out of bounds values : 0 OK" <<<"$out" || { echo "$out"; fail "all_reduce_perf from the package found wrong values"; }
env -u LD_LIBRARY_PATH "$root/usr/bin/megascale-train" --help >/dev/null || fail "the unpacked megascale-train does not start"
PYTHONPATH=$root/usr/lib/python3/dist-packages /usr/bin/python3 -c "import megascale_torch" ||
  fail "the unpacked PyTorch module does not import"
echo "deb test: $(basename "$deb") passed"
