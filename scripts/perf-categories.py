#!/usr/bin/env python3
"""Where a broker's CPU goes, from a `perf record -g` profile: each sample put in one category by its thread and
call chain (JIT compiler threads; GC; the AES-GCM cipher; reading a file into memory; sendfile; socket send and
receive; log writes; scheduling; the TLS record layer; Java copies; the rest), first match wins.

Usage: perf script -i perf.data -F comm,tid,ip,sym | perf-categories.py [--others]
With --others, also the leading leaf frames of what fell in "other Java and JVM". Used for the TLS race's profiles
(scripts/broker-tls-cost.sh with PROFILE=1; docs/benchmarks.md, "TLS").
"""
import re, sys, collections
def samples(lines):
    comm=None; stack=[]
    for line in lines:
        if not line.strip():
            if comm is not None: yield comm, stack
            comm=None; stack=[]; continue
        if not line.startswith((' ', '\t')):
            comm=line.split()[0] if line.split() else '?'
            # comm may contain spaces: take text before the tid column
            m=re.match(r'^(.*?)\s+\d+(/\d+)?\s', line)
            comm=m.group(1).strip() if m else comm
            stack=[]
        else:
            parts=line.strip().split(None,1)
            stack.append(parts[1] if len(parts)>1 else parts[0])
    if comm is not None: yield comm, stack
def category(comm, stack):
    s=' | '.join(stack)
    leaf=stack[0] if stack else ''
    if comm.startswith('C2 Compiler') or comm.startswith('C1 Compiler'): return 'JIT compiler threads'
    if comm.startswith(('G1 ','GC Thread','VM Thread')): return 'GC and VM threads'
    if re.search(r'GaloisCounterMode|GHASH|AESCrypt|CipherCore|GCTR|aescrypt|ghash|galois', s, re.I) and not re.search(r'_copy_(to|from)_iter|pread|sendmsg', leaf): return 'encrypt/decrypt (AES-GCM, JDK intrinsics)'
    if re.search(r'pread', s): return 'file read into memory (pread, page cache copy)'
    if re.search(r'sendfile|splice', s): return 'sendfile (page cache to socket)'
    if re.search(r'tcp_sendmsg|sock_sendmsg|__x64_sys_write|sys_writev|__sys_sendto', s): return 'socket send (write, loopback delivery)'
    if re.search(r'tcp_recvmsg|sys_read|sock_read|__sys_recvfrom', s): return 'socket receive (read)'
    if re.search(r'sys_pwrite|ext4_file_write|sys_fdatasync|sys_fsync', s): return 'log write/flush (pwrite, fsync)'
    if re.search(r'futex|epoll|schedule|finish_task_switch|sys_poll', s): return 'scheduling, parking, polling'
    if re.search(r'sun\.security\.ssl|TlsChannel|SslTransportLayer|SSLEngine', s): return 'TLS record layer (SSLEngine, not the cipher)'
    if re.search(r'arraycopy|StubRoutines \(finalstubs\)|memmove|memcpy|copyMemory|HeapByteBuffer\.put|ByteBuffer\.put', leaf): return 'memory copies in Java'
    if '[k]' in leaf or 'kernel' in leaf: return 'other kernel'
    return 'other Java and JVM'
counts=collections.Counter(); others=collections.Counter(); total=0
for comm, stack in samples(sys.stdin):
    c=category(comm, stack)
    counts[c]+=1; total+=1
    if c.startswith('other Java'): others[comm+' :: '+(stack[0] if stack else '')[:110]]+=1
if '--others' in sys.argv[1:]:
    for k,v in others.most_common(25): print(f'{v/total:6.1%}  other: {k}')
for k,v in counts.most_common():
    print(f'{v/total:6.1%}  {k}')
print(f'{total} samples')
