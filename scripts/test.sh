#!/usr/bin/env bash
# Quick start (2): install, build and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
# OMP_WAIT_POLICY: XGBoost's OpenMP threads otherwise busy-wait between calls.
OMP_WAIT_POLICY=PASSIVE ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-2}" "$@"
