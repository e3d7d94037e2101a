#!/usr/bin/env bash
# fuzz.sh — run every native fuzz target of the module, one after another.
#
#   scripts/fuzz.sh                 # each target for FUZZTIME (default 10m)
#   FUZZTIME=10s scripts/fuzz.sh    # the short CI run
#   scripts/fuzz.sh FuzzOps         # only targets whose name matches
#
# Targets are discovered with `go test -list`, so fuzz targets added
# anywhere in the module are picked up. Inputs that fail are written by Go to
# <package>/testdata/fuzz/<Target>/ — commit them as regression seeds.
# FUZZ_PARALLEL sets the fuzzing workers per target (default 2); FUZZMINIMIZE
# bounds the minimisation of each new input (default 10x: the engine targets
# open a store per execution, and the default 60s would eat a short run).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10m}
PARALLEL=${FUZZ_PARALLEL:-2}
FILTER=${1:-.}
status=0
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' | grep -E -- "$FILTER" || true); do
		echo "=== $pkg $target ($FUZZTIME)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "${FUZZMINIMIZE:-10x}" -parallel "$PARALLEL" "$pkg"; then
			echo "--- FAIL: $pkg $target"
			status=1
		fi
	done
done
exit $status
