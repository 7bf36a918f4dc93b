#!/usr/bin/env bash
# A/B of two tunedb builds on one workload: what a 64-trial session keeps.
#
# For each seed, a cold session with build A, then one with build B (so that
# the machine's drift touches both alike), each into its own database; then
# every session's best kernel is timed again with build B's `tunedb run`, A
# and B alternating, in three rounds. The comparison is of those re-timings
# (medians over rounds), not of the sessions' own timings, which ran minutes
# apart and are each the best of 64 noisy measurements.
#
# Usage: bench/space_ab.sh TUNEDB_A TUNEDB_B SPEC DIR SEED...
#   e.g. bench/space_ab.sh /tmp/old/build/tunedb build/tunedb \
#          conv2d_nhwc:N=1,H=28,W=28,CI=128,CO=128,KH=3,KW=3,stride=1,pad=1 /tmp/ab 0 1 2 3
# Prints one line per session, then per build the re-timed GFLOP/s (GB/s
# for a program that counts no FLOPs) per seed and their mean. With
# RETIME=own each build re-times its own kernels, for builds whose code
# generation differs (the same trace compiles to other code). With TARGET
# set (e.g. TARGET="llvm -mcpu=znver3 -num-cores=2"), both builds tune and
# time for that target instead of the host.
set -euo pipefail
if [ $# -lt 5 ]; then
  sed -n 2,17p "$0" >&2
  exit 2
fi
declare -A bin=([A]=$1 [B]=$2)
spec=$3
dir=$4
shift 4
mkdir -p "$dir"
trials=${TRIALS:-64}
target=()
if [ -n "${TARGET:-}" ]; then target=(--target "$TARGET"); fi

for seed in "$@"; do
  for v in A B; do
    db="$dir/$v-$seed.sqlite"
    rm -f "$db" "$db-wal" "$db-shm"
    best=$("${bin[$v]}" tune -w "$spec" "${target[@]}" --trials "$trials" --db "$db" --no-baseline --seed "$seed" 2>&1 | grep '^best:')
    echo "session $v seed $seed: $best"
    "${bin[$v]}" best -w "$spec" "${target[@]}" --db "$db" --format json |
      python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["trace"]))' >"$dir/$v-$seed.json"
  done
done

timings="$dir/timings.txt"
: >"$timings"
for round in 1 2 3; do
  for seed in "$@"; do
    for v in A B; do
      # GFLOP/s, or GB/s for a program that counts no FLOPs (a copy).
      timer=${bin[B]}
      if [ "${RETIME:-}" = own ]; then timer=${bin[$v]}; fi
      g=$("$timer" run -w "$spec" "${target[@]}" --trace "$dir/$v-$seed.json" --repeat 5 | awk '/^(GFLOPS|GB\/s):/ {print $2}')
      echo "$v $seed $g" >>"$timings"
    done
  done
done

python3 - "$timings" <<'EOF'
import collections, statistics, sys
by = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    v, seed, g = line.split()
    by[v][int(seed)].append(float(g))
for v in ("A", "B"):
    medians = [statistics.median(by[v][s]) for s in sorted(by[v])]
    print(f"{v}: re-timed GFLOP/s (or GB/s) by seed {[round(m, 1) for m in medians]}, mean {sum(medians) / len(medians):.1f}")
EOF
