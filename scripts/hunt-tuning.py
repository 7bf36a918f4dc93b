#!/usr/bin/env python3
"""Correctness hunt: tunes the built-in workloads at random small shapes.

Every candidate a session measures is compiled, run and compared with the
reference; the hunt reports each seed whose session failed or stored a
record that is not `ok`. Three kinds of session, one per seed:

- `shapes`: the default design space for a target other than the host
  (AVX2, SSE2, AVX-512, Zen 3; 1 to 4 cores), so the rules' 256- and
  128-bit choices and their parallel limits run too.
- `transfer`: four shapes of one workload into one database in turn, then
  two of them in one session (either task scheduler), then two again
  warm: each session starts from the other shapes' best traces, replayed
  and repaired to its own extents.
- `spaces`: a random user design space (`tune --space`): sampled tiles, a
  random loop order, a write cache, a cache read and producers at sampled
  compute locations, rfactor, fuse, parallel, vectorize, unroll and
  decompose_reduction applied by hand before the postprocessors run. A
  script the schedule refuses (exit 2, naming its own line) is counted
  apart: refusing is the right answer to many random scripts, unless the
  refusal is an "internal error" of the program check.

    scripts/hunt-tuning.py --kind spaces --seeds 0 200 [--scale 4] [--dir /tmp/hunt]
"""
import argparse
import os
import random
import sys

from hunt_common import record_statuses, sanitizer_report, tunedb, wrong

WORKLOADS = ['matmul', 'batch_matmul', 'dense', 'dense_bias_relu', 'conv2d_nhwc', 'depthwise_conv2d_nhwc',
             'softmax', 'reduce_sum']
QUICK = ['--repeat', '1', '--min-repeat-ms', '1', '--no-baseline']


def shape(rng, workload, scale=1):
    """Small, awkward extents (primes, 1s, strides that skip the last row);
    `scale` multiplies the upper bound of each tensor extent (not of
    kernel sizes, strides, padding or batch counts)."""
    r = rng.randint

    def x(lo, hi):
        return r(lo, hi * scale)

    if workload == 'matmul':
        return 'M=%d,N=%d,K=%d' % (x(1, 70), x(1, 70), x(1, 70))
    if workload == 'batch_matmul':
        return 'B=%d,M=%d,N=%d,K=%d' % (r(1, 4), x(1, 40), x(1, 40), x(1, 40))
    if workload in ('dense', 'dense_bias_relu'):
        return 'B=%d,IN=%d,OUT=%d' % (x(1, 40), x(1, 90), x(1, 70))
    if workload == 'conv2d_nhwc':
        k = r(1, 3)
        return 'N=%d,H=%d,W=%d,CI=%d,CO=%d,KH=%d,KW=%d,stride=%d,pad=%d' % (
            r(1, 2), x(k, 14), x(k, 14), x(1, 9), x(1, 40), k, rng.choice([k, r(1, 3)]), r(1, 2), r(0, k - 1))
    if workload == 'depthwise_conv2d_nhwc':
        k = r(1, 3)
        return 'N=%d,H=%d,W=%d,C=%d,KH=%d,KW=%d,stride=%d,pad=%d' % (
            r(1, 2), x(k, 14), x(k, 14), x(1, 40), k, k, r(1, 2), r(0, k - 1))
    if workload == 'softmax':
        return 'M=%d,N=%d' % (x(1, 40), x(1, 200))
    return 'M=%d,N=%d' % (x(1, 60), x(1, 300))  # reduce_sum


def specs(binary, rng, workload, n, scale=1):
    """n distinct shapes that tunedb accepts."""
    out = []
    while len(out) < n:
        spec = '%s:%s' % (workload, shape(rng, workload, scale))
        if spec not in out and tunedb(binary, ['show', '-w', spec]).returncode == 0:
            out.append(spec)
    return out


# Per workload: the block a user would tile, its loop count, which of its
# loops reduce, its intermediate inputs' producers (consumer first), its
# element-wise consumers, and how many buffers it reads.
BLOCKS = {
    'matmul': ('C', 3, [2], [], [], 2),
    'batch_matmul': ('C', 4, [3], [], [], 2),
    'dense': ('T_matmul_NT', 3, [2], [], [], 2),
    'dense_bias_relu': ('T_matmul_NT', 3, [2], [], ['T_add', 'T_relu'], 2),
    'conv2d_nhwc': ('Conv2dOutput', 7, [4, 5, 6], ['PaddedInput'], [], 2),
    'depthwise_conv2d_nhwc': ('DepthwiseConv2d', 6, [4, 5], ['PaddedInput'], [], 2),
    'softmax': ('T_softmax_norm', 2, [], ['T_softmax_expsum', 'T_softmax_exp', 'T_softmax_maxelem'], [], 2),
    'reduce_sum': ('A_red', 2, [1], [], [], 1),
}


def space_script(rng, workload):
    """A stochastic schedule script: the shape of the default space's
    choices, made at random, plus primitives applied by hand."""
    block, nloops, reduce, producers, consumers, nreads = BLOCKS[workload]
    lines = ['b0 = sch.get_block(name="%s")' % block]
    loops = ['l%d' % i for i in range(nloops)]
    lines.append('%s = sch.get_loops(block=b0)' % ', '.join(loops))
    tiles = []  # per loop, its tiles outer to inner
    for i, loop in enumerate(loops):
        if rng.random() < 0.75:
            n = rng.choice([2, 2, 3] if i in reduce else [2, 3, 3, 4])
            factors = ['v%d_%d' % (i, t) for t in range(n)]
            parts = ['t%d_%d' % (i, t) for t in range(n)]
            lines.append('%s = sch.sample_perfect_tile(loop=%s, n=%d, max_innermost_factor=%d)' %
                         (', '.join(factors), loop, n, rng.choice([4, 16, 64])))
            lines.append('%s = sch.split(loop=%s, factors=[%s], preserve_unit_iters=True)' %
                         (', '.join(parts), loop, ', '.join(factors)))
            tiles.append(parts)
        else:
            tiles.append([loop])
    # A random merge that keeps each loop's tiles outer to inner, spatial
    # tiles first more often than not (as SSRSRS does).
    order, taken = [], [0] * len(tiles)
    while len(order) < sum(map(len, tiles)):
        left = [i for i in range(len(tiles)) if taken[i] < len(tiles[i])]
        spatial = [i for i in left if i not in reduce]
        i = rng.choice(spatial if spatial and rng.random() < 0.6 else left)
        order.append(tiles[i][taken[i]])
        taken[i] += 1
    if rng.random() < 0.9:
        lines.append('sch.reorder(%s)' % ', '.join(order))
    outer = order[:max(1, len(order) // 2)]
    if rng.random() < 0.5:
        lines.append('bw = sch.cache_write(block=b0, write_buffer_index=0, storage_scope="local")')
        lines.append('sch.reverse_compute_at(block=bw, loop=%s, preserve_unit_loops=True)' % rng.choice(outer))
    for consumer in consumers:
        r = rng.random()
        if r < 0.3:
            lines.append('sch.reverse_compute_inline(block=sch.get_block(name="%s"))' % consumer)
            break
        if r < 0.7:
            lines.append('sch.reverse_compute_at(block=sch.get_block(name="%s"), loop=%s, preserve_unit_loops=True)' %
                         (consumer, rng.choice(outer)))
    for k, producer in enumerate(producers):
        if rng.random() < 0.8:
            lines.append('bp%d = sch.get_block(name="%s")' % (k, producer))
            lines.append('lp%d = sch.sample_compute_location(block=bp%d)' % (k, k))
            lines.append('sch.compute_at(block=bp%d, loop=lp%d)' % (k, k))
    if rng.random() < 0.3:
        lines.append('bc = sch.cache_read(block=b0, read_buffer_index=%d, storage_scope="global")' % rng.randrange(nreads))
        lines.append('lc = sch.sample_compute_location(block=bc)')
        lines.append('sch.compute_at(block=bc, loop=lc)')
    reduction_tiles = [t for i, parts in enumerate(tiles) if i in reduce for t in parts]
    if reduction_tiles and rng.random() < 0.25:
        lines.append('rf = sch.rfactor(loop=%s, factor_axis=%d)' % (rng.choice(reduction_tiles), rng.choice([0, 0, 1])))
    r = rng.random()
    if r < 0.2 and len(order) > 1 and not set(order[:2]) & set(reduction_tiles):
        lines.append('fused = sch.fuse(%s, %s)' % (order[0], order[1]))
        lines.append('sch.parallel(loop=fused)')
    elif r < 0.45 and order[0] not in reduction_tiles:
        lines.append('sch.parallel(loop=%s)' % order[0])
    if rng.random() < 0.3 and order[-1] not in reduction_tiles:
        lines.append('sch.vectorize(loop=%s)' % order[-1])
    if rng.random() < 0.2 and len(order) > 2:
        lines.append('sch.unroll(loop=%s)' % order[-2])
    if reduction_tiles and rng.random() < 0.2:
        lines.append('sch.decompose_reduction(block=b0, loop=%s)' % rng.choice(order))
    # The default space's annotations, which the postprocessors turn into
    # loops on top of whatever the script did.
    lines.append('root = sch.get_block(name="root")')
    if rng.random() < 0.8:
        lines.append('sch.annotate(block_or_loop=root, ann_key="meta_schedule.parallel", ann_val=%d)' %
                     rng.choice([1, 2, 16, 32, 64]))
    if rng.random() < 0.8:
        lines.append('sch.annotate(block_or_loop=root, ann_key="meta_schedule.vectorize", ann_val=%d)' %
                     rng.choice([0, 8, 16, 64]))
    if rng.random() < 0.8:
        lines.append('unroll = sch.sample_categorical(candidates=[0, 16, 64, 512], probs=[0.25, 0.25, 0.25, 0.25])')
        lines.append('sch.annotate(block_or_loop=root, ann_key="meta_schedule.unroll_explicit", ann_val=unroll)')
    return '\n'.join(lines) + '\n'


def sessions(kind, binary, rng, seed, workload, directory, scale):
    """The tune commands of one seed (each a list of arguments), and what
    they tune, for the report."""
    db = os.path.join(directory, '%s%d.sqlite' % (kind, seed))
    common = ['--db', db] + QUICK
    if kind == 'shapes':
        [spec] = specs(binary, rng, workload, 1, scale)
        target = 'llvm -mcpu=%s -num-cores=%d' % (rng.choice(['haswell', 'x86-64', 'skylake-avx512', 'znver3']),
                                                  rng.randint(1, 4))
        return db, [['-w', spec, '--target', target, '--trials', '24', '--seed', str(seed),
                     '--strategy', rng.choice(['evolutionary', 'random'])] + common], '%s [%s]' % (spec, target)
    if kind == 'transfer':
        s = specs(binary, rng, workload, 4, scale)
        return db, [
            ['-w', s[0], '--trials', '16', '--seed', str(seed)] + common,
            ['-w', s[1], '--trials', '16', '--seed', str(seed + 1)] + common,
            ['-w', s[2], '-w', s[3], '--trials', '32', '--seed', str(seed + 2), '--strategy',
             rng.choice(['evolutionary', 'random']), '--task-scheduler', rng.choice(['gradient', 'round-robin'])] +
            common,
            ['-w', s[0], '-w', s[1], '--trials', '16', '--seed', str(seed + 3)] + common,
        ], ' '.join(s)
    [spec] = specs(binary, rng, workload, 1, scale)
    path = os.path.join(directory, 'space%d.py' % seed)
    with open(path, 'w') as f:
        f.write(space_script(rng, workload))
    return db, [['-w', spec, '--space', path, '--trials', '16', '--seed', str(seed), '--strategy',
                 rng.choice(['evolutionary', 'evolutionary', 'random'])] + common], '%s %s' % (spec, path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--kind', choices=['shapes', 'transfer', 'spaces'], required=True)
    parser.add_argument('--seeds', nargs=2, type=int, default=[0, 100], metavar=('FROM', 'TO'))
    parser.add_argument('--scale', type=int, default=1,
                        help='multiply the upper bound of every tensor extent (4: medium shapes)')
    parser.add_argument('--dir', default='/tmp/tunedb-hunt')
    parser.add_argument('--tunedb', default=os.path.join(here, '..', 'build', 'tunedb'))
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    counts = {'ok': 0, 'refused': 0, 'failed': 0}
    timeouts = 0
    for seed in range(*args.seeds):
        rng = random.Random(seed)
        db, commands, what = sessions(args.kind, args.tunedb, rng, seed, WORKLOADS[seed % len(WORKLOADS)], args.dir,
                                        args.scale)
        if os.path.exists(db):
            os.remove(db)
        failure = ''
        for step, command in enumerate(commands):
            p = tunedb(args.tunedb, ['tune'] + command)
            if sanitizer_report(p.stderr):
                failure = 'session %d: %s' % (step, sanitizer_report(p.stderr))
                break
            if p.returncode == 0:
                continue
            last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''
            # A primitive's refusal names its condition; the program check's
            # "internal error" after it is a primitive that built an invalid
            # program, a bug even though refused.
            if (args.kind == 'spaces' and p.returncode == 2 and last.startswith('tunedb: error: ' + command[3] + ':')
                    and 'internal error' not in last):
                failure = 'refused'
            else:
                failure = 'session %d: exit %d: %s' % (step, p.returncode, p.stderr.strip()[-300:])
            break
        if failure == 'refused':
            counts['refused'] += 1
            print('seed %d: refused: %s (%s)' % (seed, last, what), flush=True)
            continue
        statuses = record_statuses(args.tunedb, db)
        timeouts += statuses.get('timeout', 0)
        bad = wrong(statuses)
        if failure or bad:
            counts['failed'] += 1
            print('seed %d: FAILED %s %s (%s)' % (seed, failure, bad, what), flush=True)
        else:
            counts['ok'] += 1
            print('seed %d: %s (%s)' % (seed, statuses, what), flush=True)
    print('%d ok, %d refused, %d failed; %d timeouts' % (counts['ok'], counts['refused'], counts['failed'], timeouts))
    sys.exit(1 if counts['failed'] else 0)


if __name__ == '__main__':
    main()
