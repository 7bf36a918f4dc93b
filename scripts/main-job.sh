#!/usr/bin/env bash
# Quick start (1): install, build and run tunedb's main job: a tuning
# session of the default workload (matmul 512x512x512, 64 trials) into the
# embedded database ./tunedb.sqlite. Running it again starts a warm session
# (or resumes one interrupted by Ctrl-C). Extra arguments go to `tunedb tune`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/tunedb tune --workload matmul:M=512,N=512,K=512 --trials 64 --db ./tunedb.sqlite "$@"
