#!/usr/bin/env bash
# Fuzzes one target of fuzz/ with libFuzzer, under AddressSanitizer and
# UndefinedBehaviorSanitizer, for a while.
#
#   scripts/fuzz.sh TARGET [SECONDS] [WORK_DIR]
#
# TARGET is workload_text, program_json, trace_json, schedule_script,
# http_routes, http_wire, tvm_import, schedule_steps, compiled_steps,
# compiled_text, design_space or db_file; SECONDS defaults to 300. The fuzzer starts from the
# committed corpus (fuzz/corpus/TARGET) and writes what it finds into
# WORK_DIR (default /tmp/tunedb-fuzz/TARGET): corpus/, the inputs that
# reached new code, and crash-*, timeout-* or leak-* files, each an input
# that breaks a promise; rerun one with build-fuzz/fuzz/fuzz_TARGET FILE.
# An input that found a bug goes into fuzz/corpus/TARGET with its fix, so
# that the ordinary test suite replays it.
#
# Needs clang and its libFuzzer runtime (Debian's clang-14 and
# libclang-rt-14-dev, installed here when missing); builds into
# ./build-fuzz, incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh TARGET [SECONDS] [WORK_DIR]}
seconds=${2:-300}
work=${3:-/tmp/tunedb-fuzz/$target}
if [ ! -d "fuzz/corpus/$target" ]; then
  echo "fuzz.sh: no target '$target' (fuzz/corpus has: $(ls fuzz/corpus | tr '\n' ' '))" >&2
  exit 2
fi

bash scripts/install-deps.sh
for p in clang-14 libclang-rt-14-dev; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends clang-14 libclang-rt-14-dev
    break
  fi
done

if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DTUNEDB_FUZZ=ON -DTUNEDB_SANITIZE=address,undefined -DTUNEDB_BUILD_TESTS=OFF
fi
cmake --build build-fuzz -j "${JOBS:-2}" --target "fuzz_$target"

mkdir -p "$work/corpus"
cp -n "fuzz/corpus/$target"/* "$work/corpus/"
# More seeds, read and never written: the shipped workload files and
# schedules, and the texts of the other target on the same input.
case "$target" in
  workload_text | compiled_text)
    seeds="bench/workloads bench/schedules fuzz/corpus/workload_text fuzz/corpus/compiled_text" ;;
  schedule_script) seeds="bench/schedules" ;;
  *) seeds="" ;;
esac
seed_dirs=()
for d in $seeds; do seed_dirs+=("$PWD/$d"); done
# -timeout: an input that runs for seconds on these small programs is a
# hang. -rss_limit_mb: a program padded to gigabytes is refused before it
# is interpreted (fuzz_check.h), so more memory than this is a finding.
# The compiling targets spend most of their time in LLVM, whose every
# allocation AddressSanitizer records and holds in quarantine: with a small
# quarantine and no allocation stacks they take a quarter less time and a
# fraction of the memory (session 57, beside another fuzzer: 300 inputs of
# compiled_steps in 62 s and 264 MB, against 82 s and 1004 MB), where an
# hours-long run otherwise reaches -rss_limit_mb. A finding rerun by hand
# on its file (build-fuzz/fuzz/fuzz_TARGET FILE) has the allocation stacks.
#
# http_wire runs without libFuzzer's leak detection after inputs, which
# cut its speed by four (session 58: 261 against 1,159 inputs per second);
# the server's tests under AddressSanitizer (build-asan) check it for leaks.
extra=()
case "$target" in
  compiled_steps | compiled_text) export ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=16:malloc_context_size=0}" ;;
  http_wire) extra+=(-detect_leaks=0) ;;
esac
cd "$work"
exec "$OLDPWD/build-fuzz/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="$work/" "${extra[@]}" corpus "${seed_dirs[@]}"
