#!/usr/bin/env bash
# REST server benchmark (issue 8): wrk against GET /v1/workloads/{hash}/best
# on a database of 100k records, and against GET /v1/health in the same run
# as the server's own ceiling. Prints a markdown row for bench/RESULTS.md.
#
# The records are real traces (from a short `tunedb tune` of matmul 128),
# replicated with varied timings over 100 workloads and committed through the
# server's own POST /v1/records. The server and wrk share the machine's
# cores, as they would on a 2-core box serving itself.
#
# Usage: bench/server_bench.sh [--records 100000] [--seconds 10] [--connections 32]
set -euo pipefail
cd "$(dirname "$0")/.."
records=100000
seconds=10
connections=32
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    *) echo "usage: $0 [--records N] [--seconds S] [--connections C]" >&2; exit 2 ;;
  esac
done
tunedb=build/tunedb
dir=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$dir"' EXIT

$tunedb tune --workload matmul:M=128,N=128,K=128 --trials 16 --batch 16 --population 64 --no-baseline \
  --db "$dir/seed.sqlite" > /dev/null
$tunedb serve --db "$dir/bench.sqlite" --port 0 --quiet --threads 2 > "$dir/serve.log" &
server=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/serve.log" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$dir/serve.log")
target=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT target FROM targets").fetchone()[0])' "$dir/seed.sqlite")

hash=$(python3 - "$url" "$dir/seed.sqlite" "$records" "$target" <<'PY'
import random, sqlite3, sys
sys.path.insert(0, "clients/python")
from tunedb_client import TunedbClient
url, seed, total, target = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
traces = [row[0] for row in sqlite3.connect(seed).execute("SELECT trace FROM records WHERE status = 'ok'")]
client = TunedbClient(url)
rng = random.Random(0)
workloads = 100
hashes = [client.commit_workload(spec=f"matmul:M={64 + w},N=128,K=128")["hash"] for w in range(workloads)]
batch = []
for i in range(total):
    batch.append({"workload_hash": hashes[i % workloads], "target": target, "trace": traces[i % len(traces)],
                  "run_secs": [rng.uniform(1e-5, 1e-3) for _ in range(3)]})
    if len(batch) == 1000:  # about 4 MiB of real traces, under the 8 MiB body limit
        client.commit_records(batch)
        batch = []
if batch:
    client.commit_records(batch)
print(hashes[0])
PY
)
query="target=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$target")&k=1"
python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1]).read()" "$url/v1/workloads/$hash/best?$query"

run_wrk() {  # prints "requests/s p99_ms"
  wrk -t2 -c"$connections" -d"${seconds}s" --latency "$1" |
    awk '/Requests\/sec/ {rps=$2} /^ +99%/ {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; p99=v} END {print rps, p99}'
}
read -r best_rps best_p99 < <(run_wrk "$url/v1/workloads/$hash/best?$query")
read -r health_rps health_p99 < <(run_wrk "$url/v1/health")
echo "| records | connections | best: requests/s | best: p99 ms | health: requests/s | health: p99 ms | best / health |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
python3 -c "import sys; b, bp, h, hp = map(float, sys.argv[1:5]); print(f'| {int(sys.argv[5])} | {sys.argv[6]} | {b:,.0f} | {bp:.2f} | {h:,.0f} | {hp:.2f} | {b / h:.2f} |')" \
  "$best_rps" "$best_p99" "$health_rps" "$health_p99" "$records" "$connections"
