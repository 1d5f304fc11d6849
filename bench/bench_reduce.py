#!/usr/bin/python3
"""PyTorch's side of bench_reduce.c: the same sizes, best of 10."""
import sys
import time

import torch

if len(sys.argv) > 1:
    torch.set_num_threads(int(sys.argv[1]))
print("threads:", torch.get_num_threads())


def best(fn, reps=10):
    b = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t0)
    return b


n = 16 << 20
x = (torch.arange(n, dtype=torch.int64) * 7919 % 1000).float() * 1e-3
gb = n * 4 / 1e9
t = best(lambda: x.sum())
print("sum 16M float32 (all):        %7.2f ms  %6.1f GB/s" % (t * 1e3, gb / t))
rows = x.view(16384, 1024)
t = best(lambda: rows.sum(1))
print("sum [16384, 1024] dim 1:      %7.2f ms  %6.1f GB/s" % (t * 1e3, gb / t))
t = best(lambda: rows.sum(0))
print("sum [16384, 1024] dim 0:      %7.2f ms  %6.1f GB/s" % (t * 1e3, gb / t))
t = best(lambda: x.view(-1, 4).sum(0))
print("sum [4M, 4] dim 0:            %7.2f ms  %6.1f GB/s" % (t * 1e3, gb / t))
t = best(lambda: x.amax())
print("amax 16M float32:             %7.2f ms  %6.1f GB/s" % (t * 1e3, gb / t))
R, C = 8192, 1000
a = ((torch.arange(R * C, dtype=torch.int64) * 104729 % 2001 - 1000).float() * 1e-2).view(R, C)
t = best(lambda: torch.softmax(a, 1))
print("softmax [%d, %d] dim 1:    %7.2f ms  %6.2f Mrows/s" % (R, C, t * 1e3, R / t / 1e6))
t = best(lambda: torch.log_softmax(a, 1))
print("log_softmax [%d, %d] dim 1:%7.2f ms  %6.2f Mrows/s" % (R, C, t * 1e3, R / t / 1e6))
at = torch.empty(C, R)
t = best(lambda: torch.softmax(at, 0))
print("softmax [%d, %d] dim 0:    %7.2f ms  %6.2f Mrows/s" % (C, R, t * 1e3, R / t / 1e6))
a.requires_grad_(True)
go = torch.ones(R, C)
t = best(lambda: torch.softmax(a, 1).backward(go))
print("softmax fwd+bwd [%d, %d]:  %7.2f ms  %6.2f Mrows/s" % (R, C, t * 1e3, R / t / 1e6))
