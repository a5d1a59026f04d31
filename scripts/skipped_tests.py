#!/usr/bin/env python3
"""Lists the tests ctest skipped, with their reasons, and fails when one skipped for want of a package that
scripts/setup.sh installs: after setup.sh ran, such a skip means a build or detection bug, not a missing
machine feature.

A skipped test states its reason on a line "SKIPPED: <why>" (scripts) or as GoogleTest's skip message; a reason
that is a missing package ends with "[missing: <package> ...]".

usage: skipped_tests.py CTEST_JUNIT_XML SETUP_SH"""
import collections
import re
import sys
import xml.etree.ElementTree as ElementTree

MISSING = re.compile(r"\[missing: ([^\]]+)\]")


def setup_packages(setup_sh):
    text = open(setup_sh).read()
    block = re.search(r"packages=\((.*?)\n\)", text, re.S)
    if block is None:
        sys.exit(f"skipped_tests: no packages=( ... ) list in {setup_sh}")
    words = []
    for line in block.group(1).splitlines():
        words += line.split("#", 1)[0].split()
    return set(words)


def reason_of(output):
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("SKIPPED: "):
            return line[len("SKIPPED: "):].strip()
        if line.endswith(": Skipped") and i + 1 < len(lines) and not lines[i + 1].startswith("[  SKIPPED ]"):
            return lines[i + 1].strip()
    return "no reason given"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    packages = setup_packages(sys.argv[2])
    by_reason = collections.defaultdict(list)
    for case in ElementTree.parse(sys.argv[1]).getroot().iter("testcase"):
        if case.find("skipped") is None:
            continue
        out = case.find("system-out")
        by_reason[reason_of(out.text if out is not None and out.text else "")].append(case.get("name"))
    skipped = sum(len(names) for names in by_reason.values())
    print(f"\n{skipped} test(s) skipped:" if skipped else "\nno test skipped")
    bad = []
    for reason, names in sorted(by_reason.items(), key=lambda item: -len(item[1])):
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        print(f"  {reason}\n      {len(names)} test(s): {shown}")
        for match in MISSING.finditer(reason):
            for package in match.group(1).replace(",", " ").split():
                if package in packages:
                    bad.append((package, names))
    for package, names in bad:
        print(f"FAILED: {len(names)} test(s) skipped for want of {package}, which scripts/setup.sh installs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
