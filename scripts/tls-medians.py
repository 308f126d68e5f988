#!/usr/bin/env python3
"""Medians over every round of one or more TLS races (`sluice bench tls`), from their tls-rounds.csv files.

Usage: tls-medians.py RESULTS/tls/tls-rounds.csv...
Prints, per scenario, listener and broker, the median records/s and the median broker CPU per million records over all
the rounds given (each figure its own median), then Sluice/Kafka ratios and each broker over TLS against its own over
PLAINTEXT. For pooling several runs of the race on a machine whose load moved between them.
"""
import csv
import statistics
import sys
from collections import defaultdict

rounds = defaultdict(list)
for name in sys.argv[1:]:
    with open(name, newline='') as f:
        for row in csv.DictReader(f):
            key = (row['scenario'], row['listener'], row['broker'])
            rounds[key].append((float(row['records/s'].replace(',', '')), float(row['broker CPU s / M records'])))
if not rounds:
    sys.exit('no rounds')
scenarios = list(dict.fromkeys(k[0] for k in rounds))
listeners = list(dict.fromkeys(k[1] for k in rounds))
median = {k: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v), len(v)) for k, v in rounds.items()}
print('scenario | listener | broker | rounds | records/s | broker CPU s / M')
for s in scenarios:
    for l in listeners:
        for b in ('sluice', 'kafka'):
            r, c, n = median[(s, l, b)]
            print(f'{s} | {l} | {b} | {n} | {r:,.0f} | {c:.2f}')
print()
print('scenario | listener | throughput sluice/kafka | broker CPU per record sluice/kafka')
for s in scenarios:
    for l in listeners:
        rs, cs, _ = median[(s, l, 'sluice')]
        rk, ck, _ = median[(s, l, 'kafka')]
        print(f'{s} | {l} | {rs / rk:.2f} | {cs / ck:.2f}')
print()
print('scenario | listener | broker | throughput / own PLAINTEXT | broker CPU per record / own PLAINTEXT')
for s in scenarios:
    for l in listeners[1:] if listeners[0] == 'PLAINTEXT' else listeners:
        if l == 'PLAINTEXT':
            continue
        for b in ('sluice', 'kafka'):
            r, c, _ = median[(s, l, b)]
            rp, cp, _ = median[(s, 'PLAINTEXT', b)]
            print(f'{s} | {l} | {b} | {r / rp:.2f} | {c / cp:.2f}')
