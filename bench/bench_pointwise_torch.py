#!/usr/bin/python3
"""PyTorch's figures for bench/bench_pointwise.c: GB/s on 16M float32 elements."""
import time

import torch
import torch.nn.functional as F

N = 16 << 20
x = 4 * torch.sin(torch.arange(N, dtype=torch.float64) * 0.001).float()
y = torch.ones(N)
ops = [("relu", lambda: torch.relu(x), 1), ("add", lambda: x + y, 2), ("exp", lambda: torch.exp(x), 1),
       ("sigmoid", lambda: torch.sigmoid(x), 1), ("tanh", lambda: torch.tanh(x), 1),
       ("gelu_tanh", lambda: F.gelu(x, approximate="tanh"), 1), ("gelu", lambda: F.gelu(x), 1)]
threads = torch.get_num_threads()
print("%-10s %10s %10s   (16M float32, GB/s)" % ("op", "1 thread", "threads"))
for name, f, n_in in ops:
    gbs = []
    for t in (1, threads):
        torch.set_num_threads(t)
        best = 1e30
        for _ in range(5):
            t0 = time.perf_counter()
            f()
            best = min(best, time.perf_counter() - t0)
        gbs.append(N * 4.0 * (n_in + 1) / best / 1e9)
    print("%-10s %10.2f %10.2f" % (name, gbs[0], gbs[1]))
