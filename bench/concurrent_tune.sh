#!/usr/bin/env bash
# Two tuning sessions on one machine at once, against one alone.
#
# Each session tunes the same small workload with its own seed into its own
# new database (so that only the cores are shared), first one alone, then
# two started together. Two sessions sharing the cores should each take
# about twice as long in their runs as one alone; the pool of parallel
# loops (measure/runtime.h) decides whether it is much worse than that.
#
# Usage: bench/concurrent_tune.sh DIR [TRIALS] [WORKLOAD]   (default 32 trials, matmul 64)
#   TUNEDB=path overrides build/tunedb. Prints each session's last line:
#   its wall time and where it went ("runs" is the measuring).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  sed -n 2,12p "$0" >&2
  exit 2
fi
dir=$1
trials=${2:-32}
workload=${3:-matmul:M=64,N=64,K=64}
tunedb=${TUNEDB:-build/tunedb}
mkdir -p "$dir"
rm -f "$dir"/alone.sqlite* "$dir"/beside_*.sqlite*

session() {  # seed database log
  "$tunedb" tune --workload "$workload" --trials "$trials" --seed "$1" --db "$2" >"$3" 2>&1
}

echo "cores: $(nproc); workload $workload, $trials trials per session"
session 1 "$dir/alone.sqlite" "$dir/alone.log"
echo "alone:    $(tail -n 1 "$dir/alone.log")"
session 1 "$dir/beside_1.sqlite" "$dir/beside_1.log" &
first=$!
session 2 "$dir/beside_2.sqlite" "$dir/beside_2.log"
wait "$first"
echo "together: $(tail -n 1 "$dir/beside_1.log")"
echo "together: $(tail -n 1 "$dir/beside_2.log")"
