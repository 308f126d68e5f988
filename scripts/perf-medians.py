import re,statistics,collections
runs=collections.defaultdict(list)
cur=None
for line in open(__import__('sys').argv[1]):
    m=re.match(r'== run (\d) (.*)',line)
    if m: cur=m.group(2); continue
    m=re.search(r'= ([\d,]+) msg/s \((\d+) MB/s\)',line)
    if m and cur: runs[cur].append({'rate':int(m.group(1).replace(',','')),'mb':int(m.group(2))})
    m=re.search(r'p50 ([\d.]+)  p99 ([\d.]+)  p99.9 ([\d.]+)  max ([\d.]+)',line)
    if m and cur: runs[cur][-1].update(p50=float(m.group(1)),p99=float(m.group(2)),p999=float(m.group(3)),mx=float(m.group(4)))
    m=re.search(r'transferTo a loopback socket: .* = ([\d.]+) GB/s',line)
    if m and cur: runs[cur][-1]['transfer']=float(m.group(1))
    m=re.search(r'consumer: ([\d.]+) GB/s',line)
    if m and cur: runs[cur][-1]['read']=float(m.group(1))
print("| scenario | runs | msg/s (median) | MB/s | p50 us | p99 us | p99.9 us | max us | read-back GB/s | transferTo GB/s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for k,v in runs.items():
    med=lambda key: statistics.median([x[key] for x in v if key in x]) if any(key in x for x in v) else None
    rd=med('read')
    tr=med('transfer')
    print(f"| {k} | {len(v)} | {med('rate'):,.0f} | {med('mb'):.0f} | {med('p50')} | {med('p99')} | {med('p999')} | {med('mx'):,.0f} | {'' if rd is None else f'{rd:.2f}'} | {'' if tr is None else f'{tr:.2f}'} |")
print()
for k,v in runs.items(): print(k, [x['rate'] for x in v])
