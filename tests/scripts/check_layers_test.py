#!/usr/bin/env python3
"""scripts/check_layers.py passes the tree and fails a tree where a lower floor includes an upper one or a sibling."""
import pathlib
import subprocess
import sys
import tempfile

source = pathlib.Path(sys.argv[1])
checker = source / "scripts" / "check_layers.py"


def run(root):
    return subprocess.run([sys.executable, str(checker), str(root)], capture_output=True, text=True)


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


tree = run(source)
print(tree.stdout, end="")
if tree.returncode != 0:
    fail("the source tree has includes that run up a floor")

with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp)
    for folder in ("common", "congestion", "bootstrap", "collectives", "include/megascale"):
        (root / folder).mkdir(parents=True)
    (root / "collectives" / "ok.cc").write_text('#include "megascale/megascale.h"\n#include "common/log.h"\n')
    (root / "include" / "megascale" / "megascale.h").write_text('#include <stddef.h>\n')
    if run(root).returncode != 0:
        fail("a clean tree was refused")
    (root / "common" / "clock.h").write_text('#pragma once\n#include "collectives/schedule.h"\n')
    (root / "congestion" / "law.cc").write_text('#include "bootstrap/store.h"\n')
    bad = run(root)
    print(bad.stdout, end="")
    if bad.returncode != 1:
        fail("an upward include passed")
    for expected in ("common/clock.h:2: common/ includes collectives/ (a floor above)",
                     "congestion/law.cc:1: congestion/ includes bootstrap/ (a sibling on its floor)"):
        if expected not in bad.stdout:
            fail(f"missing: {expected}")
print("PASS")
