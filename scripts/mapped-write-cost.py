#!/usr/bin/env python3
"""System time to write 1 GiB into a fresh file, through a shared mapping or with positional writes.

usage: scripts/mapped-write-cost.py <falloc|trunc>-<mmap|write> [directory]   (CHUNK=bytes, default 65536)

falloc reserves the blocks first (posix_fallocate: unwritten extents, as the store's segments), trunc leaves a
sparse file. Prints elapsed, user and system seconds. The file is deleted afterwards.
"""
import mmap
import os
import sys
import time

mode = sys.argv[1]
directory = sys.argv[2] if len(sys.argv) > 2 else "."
size = 1 << 30
chunk = int(os.environ.get("CHUNK", "65536"))
path = os.path.join(directory, "mapped-write-cost.tmp")
if os.path.exists(path):
    os.remove(path)
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
try:
    if mode.startswith("falloc"):
        os.posix_fallocate(fd, 0, size)
    else:
        os.ftruncate(fd, size)
    data = b"x" * chunk
    started, before = time.time(), os.times()
    if mode.endswith("mmap"):
        mapping = mmap.mmap(fd, size)
        for offset in range(0, size, chunk):
            mapping[offset:offset + chunk] = data
        mapping.close()
    else:
        for offset in range(0, size, chunk):
            os.pwrite(fd, data, offset)
    after = os.times()
    print("%s chunk %d: elapsed %.2f s, user %.2f s, sys %.2f s" % (mode, chunk, time.time() - started,
          after.user - before.user, after.system - before.system))
finally:
    os.close(fd)
    os.remove(path)
