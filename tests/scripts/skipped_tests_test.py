#!/usr/bin/env python3
"""scripts/skipped_tests.py lists skips with their reasons (scripts' "SKIPPED:" lines and GoogleTest's skip
messages) and fails exactly when a skip names a package that setup.sh installs."""
import pathlib
import subprocess
import sys
import tempfile

source = pathlib.Path(sys.argv[1])
TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="x" tests="3">
  <testcase name="passes" status="run"><system-out>ok</system-out></testcase>
  <testcase name="gtest.skip" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>[ RUN      ] A.B
/src/a_test.cc:48: Skipped
ibverbs: no RDMA device on this host
[  SKIPPED ] A.B (1 ms)</system-out></testcase>
  <testcase name="script.skip" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/>
    <system-out>SKIPPED: torch is not importable [missing: {package}]</system-out></testcase>
</testsuite>
"""


def run(package):
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as junit:
        junit.write(TEMPLATE.format(package=package))
    result = subprocess.run([sys.executable, str(source / "scripts" / "skipped_tests.py"), junit.name,
                             str(source / "scripts" / "setup.sh")], capture_output=True, text=True)
    print(result.stdout, end="")
    return result


def expect(condition, message):
    if not condition:
        print("FAIL:", message)
        sys.exit(1)


installed = run("python3-torch")
expect(installed.returncode == 1, "a skip for want of python3-torch (setup.sh installs it) passed")
expect("2 test(s) skipped" in installed.stdout, "the count of skips")
expect("ibverbs: no RDMA device on this host\n      1 test(s): gtest.skip" in installed.stdout, "GoogleTest's reason")
expect("FAILED: 1 test(s) skipped for want of python3-torch" in installed.stdout, "the failure names the package")
foreign = run("some-package-setup-sh-does-not-install")
expect(foreign.returncode == 0, "a skip for a package outside setup.sh failed the run")
print("PASS")
