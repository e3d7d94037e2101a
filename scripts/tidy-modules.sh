#!/usr/bin/env bash
# bench/ and the adapter modules (adapters/*/go.mod) replace memor with the
# root folder, so a change of the root's requirements changes theirs: run
# this after editing the root go.mod (CI fails with "updates to go.mod
# needed" otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
for mod in bench/go.mod adapters/*/go.mod; do
  (cd "$(dirname "$mod")" && go mod tidy)
done
