#!/usr/bin/env bash
# Task schedulers compared: gradient (Ansor's) against round-robin, on a run
# of several workloads sharing one trial budget.
#
# The objective, as in Ansor, is the sum of the workloads' best latencies
# (each counted once). For each seed, one `tunedb tune` run per scheduler,
# alternating, each into its own database; then every workload's best
# kernel of every run is timed again by `tunedb run`, the runs alternating,
# in three rounds, and the sums are of those re-timings (medians), since the
# runs themselves were minutes apart on a machine whose speed drifts.
#
# Usage: bench/scheduler_bench.sh DIR [TRIALS] [SEED...]   (default 128 trials, seeds 0 1 2)
#   TUNEDB=path overrides build/tunedb. Prints, per run, the trials each
#   workload got and the sum as the run measured it; then the re-timed sums.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  sed -n 2,14p "$0" >&2
  exit 2
fi
dir=$1
trials=${2:-128}
shift $(($# >= 2 ? 2 : 1))
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(0 1 2)
tunedb=${TUNEDB:-build/tunedb}
mkdir -p "$dir"

# A small network's kernels, of latencies from about 10 us to 0.6 ms.
workloads=(
  "conv2d_nhwc:N=1,H=56,W=56,CI=64,CO=64,KH=3,KW=3,stride=1,pad=1"
  "dense_bias_relu:B=128,IN=784,OUT=128"
  "softmax:M=128,N=1024"
  "matmul:M=128,N=128,K=128"
)
args=()
for w in "${workloads[@]}"; do args+=(-w "$w"); done

for seed in "${seeds[@]}"; do
  for sched in round-robin gradient; do
    db="$dir/$sched-$seed.sqlite"
    rm -f "$db" "$db-wal" "$db-shm"
    "$tunedb" tune "${args[@]}" --trials "$trials" --task-scheduler "$sched" --seed "$seed" --db "$db" \
      --no-baseline >"$dir/$sched-$seed.log" 2>&1
    files=()
    for i in "${!workloads[@]}"; do
      "$tunedb" best -w "${workloads[$i]}" --db "$db" --format json >"$dir/$sched-$seed-$i.json"
      files+=("$dir/$sched-$seed-$i.json")
    done
    # Per workload: the trials it got and its best as the run measured it;
    # each best's trace goes to a file of its own for `tunedb run`.
    python3 - "$sched seed $seed" "$db" "${files[@]}" <<'EOF'
import json, sqlite3, sys
label, db, files = sys.argv[1], sys.argv[2], sys.argv[3:]
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
parts, total = [], 0.0
for f in files:
    best = json.load(open(f))
    json.dump(best["trace"], open(f.replace(".json", ".trace.json"), "w"))
    name, n = con.execute("SELECT w.name, count(*) FROM records r JOIN workloads w ON w.id = r.workload_id "
                          "WHERE w.hash = ?", (best["workload_hash"],)).fetchone()
    parts.append(f"{name.split(':')[0]} {n} trials {best['median_secs'] * 1e6:.1f} us")
    total += best["median_secs"]
print(f"{label}: " + "; ".join(parts) + f"; sum {total * 1e6:.1f} us")
EOF
  done
done

timings="$dir/timings.txt"
: >"$timings"
for round in 1 2 3; do
  for seed in "${seeds[@]}"; do
    for sched in round-robin gradient; do
      for i in "${!workloads[@]}"; do
        secs=$("$tunedb" run -w "${workloads[$i]}" --trace "$dir/$sched-$seed-$i.trace.json" --repeat 5 |
          awk '/^median:/ {v = $2; u = $3; if (u == "ms") v *= 1e-3; else if (u == "us") v *= 1e-6; print v}')
        echo "$sched $seed $i $secs" >>"$timings"
      done
    done
  done
done

python3 - "$timings" <<'EOF'
import collections, statistics, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    sched, seed, i, secs = line.split()
    times[(sched, int(seed), int(i))].append(float(secs))
for sched in ("round-robin", "gradient"):
    seeds = sorted({s for (k, s, _) in times if k == sched})
    sums = [sum(statistics.median(v) for (k, s, _), v in times.items() if k == sched and s == seed) for seed in seeds]
    print(f"{sched}: re-timed sum of bests by seed {[round(x * 1e6, 1) for x in sums]} us, "
          f"mean {sum(sums) / len(sums) * 1e6:.1f} us")
EOF
