#!/usr/bin/python3
"""Runs bench_random (ctorch) and the same random ops in PyTorch with the same thread
count; prints both and the ratios (PyTorch time / ctorch time: > 1 means ctorch is
faster).  Usage: bench/bench_random.py path/to/bench_random [threads]"""
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

exe = sys.argv[1]
threads = int(sys.argv[2]) if len(sys.argv) > 2 else torch.get_num_threads()
torch.set_num_threads(threads)
N = 10_000_000
x = torch.ones(N)
ops = {
    "rand": lambda: torch.rand(N),
    "randn": lambda: torch.randn(N),
    "randint": lambda: torch.randint(0, 100, (N,)),
    "bernoulli_": lambda: x.bernoulli_(0.5),
    "dropout": lambda: F.dropout(x, 0.5, True),
}
best = {k: 1e9 for k in ops}
for _ in range(7):
    for k, f in ops.items():
        t0 = time.perf_counter()
        f()
        best[k] = min(best[k], time.perf_counter() - t0)
out = subprocess.run([exe, str(threads)], capture_output=True, text=True, check=True).stdout
ct = dict(l.split() for l in out.splitlines() if l and not l.startswith("threads"))
print("threads %d" % threads)
print("%-12s %10s %10s %8s" % ("", "ctorch ms", "torch ms", "ratio"))
for k in ops:
    c = float(ct[k + "_ms"])
    print("%-12s %10.2f %10.2f %8.2f" % (k, c, best[k] * 1e3, best[k] * 1e3 / c))
