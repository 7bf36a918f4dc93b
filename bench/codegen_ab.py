#!/usr/bin/env python3
"""A/B of two tunedb builds' code generation on the candidates of a session.

Every ok record of each database is compiled and timed by both builds'
`tunedb run --trace`, in the order A, B, B, A, so that the machine's drift
touches both alike; each build's speed is the geometric mean of its two
timings. Tuning does not enter: the same programs, two compilers. Prints
per database the geometric mean of B / A, how many candidates moved by
more than 10% either way, the extremes, and each build's fastest; and, as
the control, how many candidates' two timings by the same build differ by
more than 10%: a count of moves no larger than that is the machine's noise.
Run with the same build as A and B, every figure is the noise.

Usage: bench/codegen_ab.py TUNEDB_A TUNEDB_B DB...
  e.g. bench/codegen_ab.py /tmp/old/tunedb build/tunedb bench/results/tune_conv2d_resnet_cold.sqlite
A build copied out of its tree finds its shared libraries in a lib/
folder beside its tunedb (they are put on LD_LIBRARY_PATH).
"""
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile


def runner(tunedb):
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.abspath(tunedb)), "lib")
    if os.path.isdir(lib):
        env["LD_LIBRARY_PATH"] = lib + os.pathsep + env.get("LD_LIBRARY_PATH", "")

    def gflops(spec, trace_file):
        p = subprocess.run([tunedb, "run", "-w", spec, "--trace", trace_file, "--repeat", "3", "--min-repeat-ms", "20"],
                           capture_output=True, text=True, env=env)
        m = re.search(r"GFLOPS:\s+([\d.]+)", p.stdout)
        return float(m.group(1)) if m else None

    return gflops


def main():
    if len(sys.argv) < 4:
        print(__doc__.split("\n\n", 1)[1], file=sys.stderr)
        sys.exit(2)
    a, b = runner(sys.argv[1]), runner(sys.argv[2])
    for path in sys.argv[3:]:
        db = sqlite3.connect(path)
        spec = db.execute("SELECT name FROM workloads").fetchone()[0]
        traces = [t for (t,) in db.execute("SELECT trace FROM records WHERE status = 'ok' ORDER BY id")]
        ratios, best_a, best_b, unsteady = [], 0.0, 0.0, 0
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            for trace in traces:
                f.seek(0)
                f.truncate()
                f.write(trace)
                f.flush()
                a1, b1, b2, a2 = a(spec, f.name), b(spec, f.name), b(spec, f.name), a(spec, f.name)
                if None in (a1, b1, b2, a2):
                    continue  # failed to build or run with one of the builds: not a speed comparison
                ga, gb = math.sqrt(a1 * a2), math.sqrt(b1 * b2)
                ratios.append(gb / ga)
                unsteady += sum(max(x, y) / min(x, y) > 1.1 for x, y in ((a1, a2), (b1, b2)))
                best_a, best_b = max(best_a, ga), max(best_b, gb)
        if not ratios:
            print(f"{path}: no candidate ran with both builds")
            continue
        ratios.sort()
        mean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{path}: {spec}: {len(ratios)} candidates, B / A geometric mean {mean:.3f}, "
              f"{sum(r > 1.1 for r in ratios)} above 1.1, {sum(r < 0.9 for r in ratios)} below 0.9, "
              f"range {ratios[0]:.2f}-{ratios[-1]:.2f}; fastest A {best_a:.1f}, B {best_b:.1f} GFLOP/s; "
              f"control: {unsteady} of {2 * len(ratios)} pairs of one build's timings differ by more than 10%",
              flush=True)


if __name__ == "__main__":
    main()
