#!/usr/bin/python3
"""PyTorch's side of bench_dtype.c: the same ops and sizes, medians of 5 runs.
Run as OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_dtype.py [threads]."""
import statistics
import sys
import time

import torch

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
with open("/proc/cpuinfo") as f:
    print("cpu:", next(l for l in f if l.startswith("model name")).split(":", 1)[1].strip())
print("threads: %d (median of 5 runs, ms)" % torch.get_num_threads())


def median(fn, reps=5):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def run(dt):
    n = 16 << 20
    x = (torch.rand(n) - 0.5).to(dt)
    y = torch.rand(n).to(dt)
    rows = x.view(16384, 1024)
    a = torch.randn(1024, 1024).to(dt)
    b = torch.randn(1024, 1024).to(dt)
    ops = [lambda: x + y, lambda: torch.exp(x), lambda: x.sum(),
           lambda: torch.softmax(rows, 1), lambda: a @ b]
    res = []
    for op in ops:
        try:
            res.append("%9.2f" % (median(op) * 1e3))
        except RuntimeError:
            res.append("%9s" % "n/a")
    return res


print("%-28s %9s %9s %9s" % ("", "float32", "bfloat16", "float16"))
cols = [run(d) for d in (torch.float32, torch.bfloat16, torch.float16)]
names = ["add 16M", "exp 16M", "sum 16M", "softmax [16384, 1024] dim 1", "matmul 1024 x 1024"]
for i, name in enumerate(names):
    print("%-28s %s %s %s" % (name, cols[0][i], cols[1][i], cols[2][i]))
