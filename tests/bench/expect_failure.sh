#!/usr/bin/env bash
# Runs a command that must fail and print a pattern: expect_failure.sh PATTERN command...
set -u
pattern=$1
shift
output=$("$@" 2>&1)
status=$?
echo "$output"
if [ $status -eq 0 ]; then echo "expected a non-zero exit status" >&2; exit 1; fi
if ! grep -q -- "$pattern" <<<"$output"; then echo "expected output matching: $pattern" >&2; exit 1; fi
exit 0
