#!/usr/bin/env python3
"""Correctness hunt: tunes random written workloads with a small budget.

Each seed makes a workload-language program (a chain of element-wise
stages, reductions, matmuls, stencils with zero padding, transposes and
row normalizations, at small and awkward extents), checks that tunedb runs
it unscheduled, then tunes it into a fresh database (`tunedb tune`, every
candidate compiled, run and compared with the reference) and reports each
seed whose session failed or stored a record that is not `ok`. The design
space, the postprocessors, lowering, versioning and code generation all
run on programs no test was written for.

    scripts/hunt-written-workloads.py --seeds 0 200 [--trials 24] [--dir /tmp/hunt]

Timeouts are reported apart: on a loaded machine a kernel's parallel loop
can wait for a descheduled thread for milliseconds per call.
"""
import argparse
import os
import random
import subprocess
import sys

from hunt_common import record_statuses, sanitizer_report, wrong


def pointwise_chain(rng):
    """Stages over random extents whose indices wrap (`i % n`), reverse,
    shift with a zero border, or read constants; in f32, or one in five in
    i32, i64 or f64."""
    dtype = 'f32' if rng.random() < 0.8 else rng.choice(['i32', 'i64', 'f64'])
    floating = dtype in ('f32', 'f64')
    zero = '0.0' if floating else '0'
    tensors, lines = [], []
    for n in range(rng.randint(1, 3)):
        shape = [rng.randint(1, 24) for _ in range(rng.randint(1, 3))]
        tensors.append(('X%d' % n, shape))
        lines.append('input X%d: %s[%s]' % (n, dtype, ', '.join(map(str, shape))))
    for s in range(rng.randint(1, 4)):
        pool = [e for _, shape in tensors for e in shape]
        out = [rng.choice(pool) if rng.random() < 0.8 else rng.randint(1, 24) for _ in range(rng.randint(1, 3))]
        names = ['i%d' % d for d in range(len(out))]
        reduction = ('k', rng.choice(pool) if rng.random() < 0.8 else rng.randint(1, 30)) if rng.random() < 0.5 else None
        variables = list(zip(names, out)) + ([reduction] if reduction else [])

        def index(extent):
            same = [v for v, e in variables if e == extent]
            r = rng.random()
            if same and r < 0.7:
                v = rng.choice(same)
                return '%d - 1 - %s' % (extent, v) if rng.random() < 0.15 and extent > 2 else v
            v, _ = rng.choice(variables)
            if r < 0.85:
                return '%s %% %d' % (v, extent)
            if r < 0.93:
                return '%s / %d %% %d' % (v, rng.randint(1, 3), extent)
            return str(rng.randint(0, extent - 1))

        def read():
            name, shape = rng.choice(tensors)
            indices = [index(e) for e in shape]
            if rng.random() < 0.85:
                return '%s[%s]' % (name, ', '.join(indices))
            d = rng.randrange(len(shape))
            offset = rng.choice([-2, -1, 1, 2])
            indices[d] = '(%s) %s %d' % (indices[d], '+' if offset > 0 else '-', abs(offset))
            return 'select(%s >= 0 && %s < %d, %s[%s], %s)' % (indices[d], indices[d], shape[d], name,
                                                             ', '.join(indices), zero)

        def expr(depth):
            r = rng.random()
            if depth > 2 or r < 0.35:
                return read()
            if r < 0.6:
                return '%s %s %s' % (expr(depth + 1), rng.choice('+-*'), expr(depth + 1))
            if r < 0.7:
                return '%s(%s, %s)' % (rng.choice(['max', 'min']), expr(depth + 1), expr(depth + 1))
            if r < 0.78 and floating:
                return '%s(%s)' % (rng.choice(['tanh', 'sigmoid', 'abs']), expr(depth + 1))
            if r < 0.86:
                v, e = rng.choice(variables)
                return '(%s < %d ? %s : %s)' % (v, rng.randint(0, e), expr(depth + 1), expr(depth + 1))
            return '%s * %s' % (expr(depth + 1), rng.choice(['2', '3', '0.5'] if floating else ['2', '3']))

        left = 'S%d[%s]' % (s, ', '.join('%s in %d' % (v, e) for v, e in zip(names, out)))
        if reduction:
            op = rng.choice(['sum', 'sum', 'max', 'min'])
            lines.append('%s = %s(k in %d) %s' % (left, op, reduction[1], expr(0)))
        else:
            lines.append('%s = %s' % (left, expr(0)))
        tensors.append(('S%d' % s, out))
    return '\n'.join(lines) + '\n'


def operator_chain(rng):
    """Matmuls, strided stencils, row reductions, normalizations, transposes
    and broadcasts, chained where the shapes meet; one in five in f64."""
    lines, tensors, inputs = [], [], [0]

    def new_input(shape):
        name = 'I%d' % inputs[0]
        inputs[0] += 1
        lines.append('input %s: f32[%s]' % (name, ', '.join(map(str, shape))))
        tensors.append((name, shape))
        return name

    def extent():
        return rng.choice([1, 2, 3, 5, 7, 8, 12, 16, 17, 24, 31, 32, 48, 64])

    def matrix():
        known = [t for t in tensors if len(t[1]) == 2]
        if known and rng.random() < 0.8:
            return rng.choice(known)
        shape = [extent(), extent()]
        return new_input(shape), shape

    def pointwise(x):
        return rng.choice(['%s', 'max(%s, 0.0)', 'tanh(%s)', '%s * 0.5', 'abs(%s)', 'sigmoid(%s)']) % x

    for s in range(rng.randint(1, 4)):
        name = 'S%d' % s
        a, (m, k) = matrix()
        kind = rng.choice(['matmul', 'matmul', 'stencil', 'row', 'norm', 'transpose', 'broadcast'])
        if kind == 'matmul':
            n = extent()
            fitting = [t for t in tensors if len(t[1]) == 2 and t[1][0] == k and t[0] != a]
            if fitting and rng.random() < 0.6:
                b, (_, n) = rng.choice(fitting)
                b_index = 'k, j'
            elif rng.random() < 0.5:
                b, b_index = new_input([n, k]), 'j, k'
            else:
                b, b_index = new_input([k, n]), 'k, j'
            lines.append('%s[i in %d, j in %d] = sum(k in %d) %s[i, k] * %s[%s]' % (name, m, n, k, a, b, b_index))
            shape = [m, n]
        elif kind == 'stencil':
            window, stride = rng.choice([2, 3, 5]), rng.choice([1, 1, 2])
            pad = rng.randint(0, window - 1)
            rows = max(1, (m + 2 * pad - window) // stride + 1)
            at = ('i * %d + r - %d' % (stride, pad)) if stride > 1 else ('i + r - %d' % pad)
            lines.append('%s[i in %d, j in %d] = sum(r in %d) select(%s >= 0 && %s < %d, %s[%s, j], 0.0) * %s' %
                         (name, rows, k, window, at, at, m, a, at, rng.choice(['0.5', '2.0', '1.0'])))
            shape = [rows, k]
        elif kind == 'row':
            lines.append('%s[i in %d] = %s(k in %d) %s' % (name, m, rng.choice(['sum', 'max', 'min']), k,
                                                           pointwise('%s[i, k]' % a)))
            shape = [m]
        elif kind == 'norm':
            lines.append('%s_m[i in %d] = max(k in %d) %s[i, k]' % (name, m, k, a))
            lines.append('%s_e[i in %d, j in %d] = sigmoid(%s[i, j] - %s_m[i])' % (name, m, k, a, name))
            lines.append('%s_s[i in %d] = sum(k in %d) %s_e[i, k]' % (name, m, k, name))
            lines.append('%s[i in %d, j in %d] = %s_e[i, j] / (%s_s[i] + 1.0)' % (name, m, k, name, name))
            shape = [m, k]
        elif kind == 'transpose':
            lines.append('%s[j in %d, i in %d] = %s' % (name, k, m, pointwise('%s[i, j]' % a)))
            shape = [k, m]
        else:
            bias = new_input([k]) if rng.random() < 0.7 else None
            value = ('%s[i, j] + %s[j]' % (a, bias)) if bias else ('%s[i, j] * 2.0' % a)
            lines.append('%s[i in %d, j in %d] = %s' % (name, m, k, pointwise(value)))
            shape = [m, k]
        tensors.append((name, shape))
    text = '\n'.join(lines) + '\n'
    # Drawn last, so that the f32 programs stay those of earlier hunts.
    return text.replace(': f32[', ': f64[') if rng.random() < 0.2 else text


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', nargs=2, type=int, default=[0, 100], metavar=('FROM', 'TO'))
    parser.add_argument('--trials', default='24')
    parser.add_argument('--dir', default='/tmp/tunedb-hunt')
    parser.add_argument('--tunedb', default=os.path.join(here, '..', 'build', 'tunedb'))
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    failed = timeouts = 0
    for seed in range(*args.seeds):
        rng = random.Random(seed)
        text = (pointwise_chain if seed % 2 == 0 else operator_chain)(rng)
        path, db = os.path.join(args.dir, 'w%d.txt' % seed), os.path.join(args.dir, 'w%d.sqlite' % seed)
        with open(path, 'w') as f:
            f.write(text)
        if os.path.exists(db):
            os.remove(db)
        plain = subprocess.run([args.tunedb, 'run', '-w', path, '--repeat', '1', '--min-repeat-ms', '1'],
                               capture_output=True, text=True)
        if plain.returncode != 0 or 'status:    ok' not in plain.stdout or sanitizer_report(plain.stderr):
            failed += 1
            print('seed %d: unscheduled: %s' % (seed, (plain.stdout + plain.stderr).strip()[-300:]), flush=True)
            continue
        strategy = rng.choice(['evolutionary', 'random'])
        tune = subprocess.run([args.tunedb, 'tune', '-w', path, '--trials', args.trials, '--db', db, '--strategy',
                               strategy, '--seed', str(seed), '--repeat', '1', '--min-repeat-ms', '1',
                               '--no-baseline'], capture_output=True, text=True)
        statuses = record_statuses(args.tunedb, db)
        bad = wrong(statuses)
        timeouts += statuses.get('timeout', 0)
        report = sanitizer_report(tune.stderr)
        if tune.returncode != 0 or bad or report:
            failed += 1
            print('seed %d (%s): exit %d, %s %s' % (seed, strategy, tune.returncode, bad,
                                                    report or tune.stderr.strip()[-300:]), flush=True)
        else:
            print('seed %d (%s): %s' % (seed, strategy, statuses), flush=True)
    print('%d of %d seeds failed; %d timeouts' % (failed, args.seeds[1] - args.seeds[0], timeouts))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
