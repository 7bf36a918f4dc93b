#!/usr/bin/env bash
# Quick start (1): install, build and run tunedb's main job on the default
# workload. Extra arguments are passed to `tunedb`'s subcommand.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/tunedb show --workload matmul:M=512,N=512,K=512 "$@"
