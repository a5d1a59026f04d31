#!/usr/bin/env python3
"""Folders are layers: a file may include its own folder and the floors below, never a floor above or a sibling
on its own floor. Prints every include that runs the wrong way; exits 1 if there is one.

usage: check_layers.py [SOURCE_DIR]"""
import pathlib
import re
import sys

# Lowest first. Folders on one floor do not include each other. include/megascale/ (the C API's header) is
# part of collectives/. The top floor (bench, examples, testbed, tests) may include anything and is not checked.
FLOORS = [
    ["common"],
    ["bootstrap", "congestion"],
    ["transport"],
    ["topology"],
    ["collectives"],
    ["sim", "nccl_plugin", "pytorch", "trainer"],
    ["launcher"],
]
SOURCE_SUFFIXES = {".h", ".cc", ".inc", ".cu", ".cuh", ".c"}
PART_OF = {"megascale": "collectives"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z_]+)/')


def floor_of(folder):
    folder = PART_OF.get(folder, folder)
    for level, folders in enumerate(FLOORS):
        if folder in folders:
            return level
    return None


def violations(root):
    found = []
    for level, folders in enumerate(FLOORS):
        for folder in folders:
            bases = [root / folder] + [root / "include" / part for part, owner in PART_OF.items() if owner == folder]
            for path in sorted(p for base in bases for p in base.rglob("*")):
                if path.suffix not in SOURCE_SUFFIXES:
                    continue
                for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                    match = INCLUDE.match(line)
                    if not match or PART_OF.get(match.group(1), match.group(1)) == folder:
                        continue
                    target = floor_of(match.group(1))
                    if target is None:
                        continue  # a system or third-party header spelled with quotes
                    if target > level or (target == level and match.group(1) != folder):
                        what = "a floor above" if target > level else "a sibling on its floor"
                        found.append(f"{path.relative_to(root)}:{number}: {folder}/ includes "
                                     f"{match.group(1)}/ ({what}): {line.strip()}")
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = violations(root)
    for line in found:
        print(line)
    floors = " < ".join("{" + ", ".join(f) + "}" for f in FLOORS)
    print(f"layers {floors}: {len(found)} include(s) running the wrong way")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
