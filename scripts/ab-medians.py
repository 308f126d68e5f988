"""Medians of an interleaved A/B log from scripts/ab.sh: one row per scenario, old against new."""
import collections
import re
import statistics
import sys

runs = collections.defaultdict(list)
current = None
for line in open(sys.argv[1]):
    m = re.match(r'== run (\d) (old|new) (.*)', line)
    if m:
        current = (m.group(3), m.group(2))
        runs[current].append({})
        continue
    if current is None:
        continue
    row = runs[current][-1]
    m = re.search(r'key lookups: .*p50 ([\d.]+)  p99 ([\d.]+)  p99.9 ([\d.]+)', line)
    if m:
        row.update(lookup_p99=float(m.group(2)), lookup_p999=float(m.group(3)))
        continue
    m = re.search(r'= ([\d,]+) msg/s \((\d+) MB/s\)', line)
    if m:
        row.update(rate=int(m.group(1).replace(',', '')), mb=int(m.group(2)))
    m = re.search(r'latency us: p50 ([\d.]+)  p99 ([\d.]+)  p99.9 ([\d.]+)  max ([\d.]+)', line)
    if m:
        row.update(p99=float(m.group(2)), p999=float(m.group(3)), mx=float(m.group(4)))
    m = re.search(r'transferTo a loopback socket: .* = ([\d.]+) GB/s', line)
    if m:
        row['transfer'] = float(m.group(1))
    m = re.search(r'consumer: ([\d.]+) GB/s', line)
    if m:
        row['read'] = float(m.group(1))

def median(rows, key):
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else None

def fmt(value, pattern):
    return '' if value is None else pattern.format(value)

print('| scenario | build | msg/s (median) | per run | p99 us | p99.9 us | max us | read GB/s | transferTo GB/s'
      ' | lookup p99 us |')
print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
for name in dict.fromkeys(k[0] for k in runs):
    for build in ('old', 'new'):
        rows = runs.get((name, build), [])
        if not rows:
            continue
        per_run = ' / '.join(f"{r['rate']:,}" for r in rows if 'rate' in r)
        print(f"| {name} | {build} | {fmt(median(rows, 'rate'), '{:,.0f}')} | {per_run} | {fmt(median(rows, 'p99'), '{:.1f}')}"
              f" | {fmt(median(rows, 'p999'), '{:.1f}')} | {fmt(median(rows, 'mx'), '{:,.0f}')}"
              f" | {fmt(median(rows, 'read'), '{:.2f}')} | {fmt(median(rows, 'transfer'), '{:.2f}')}"
              f" | {fmt(median(rows, 'lookup_p99'), '{:.1f}')} |")
