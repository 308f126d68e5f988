#!/usr/bin/env python3
"""Summarises async-profiler collapsed stacks (recorded with the 'threads' option) of one or more JVMs.

Usage: profile-summary.py FILE... [-- FRAME...]
Prints the share of samples by thread (numbers folded), kernel against user time (by the leaf frame), the leaf
frames that lead, and for each FRAME given the share of samples whose stack holds a frame containing it.
"""
import collections
import re
import sys

args = sys.argv[1:]
files = args[:args.index('--')] if '--' in args else args
frames = args[args.index('--') + 1:] if '--' in args else []

total = 0
threads = collections.Counter()
leaves = collections.Counter()
kernel = 0
holding = collections.Counter()
for name in files:
    with open(name) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(' ')
            count = int(count)
            parts = stack.split(';')
            total += count
            threads[re.sub(r'\d+', 'N', parts[0].strip('[]').split(' tid=')[0])] += count
            leaves[parts[-1]] += count
            if parts[-1].endswith('_[k]'):
                kernel += count
            for frame in frames:
                if frame in stack:
                    holding[frame] += count

if total == 0:
    sys.exit('no samples')
print(f'{total} samples; kernel {kernel / total:.1%}, user {(total - kernel) / total:.1%}')
print('threads:')
for name, count in threads.most_common(15):
    print(f'  {count / total:6.1%}  {name}')
print('leaf frames:')
for name, count in leaves.most_common(15):
    print(f'  {count / total:6.1%}  {name}')
for frame in frames:
    print(f'stacks holding {frame}: {holding[frame] / total:.1%}')
