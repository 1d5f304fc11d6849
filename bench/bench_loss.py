#!/usr/bin/python3
"""Runs bench_loss (ctorch) and the same cross_entropy in PyTorch with the same thread
count; prints both and the ratios (PyTorch time / ctorch time: > 1 means ctorch is
faster).  Usage: bench/bench_loss.py path/to/bench_loss [threads]"""
import os
import sys
import time
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ctorch_figures, print_ratios  # noqa: E402

exe = sys.argv[1]
threads = int(sys.argv[2]) if len(sys.argv) > 2 else torch.get_num_threads()
torch.set_num_threads(threads)
x = torch.randn(512, 1000, requires_grad=True)
t = torch.randint(0, 1000, (512,))
best_f = best_fb = 1e9
for _ in range(20):
    t0 = time.perf_counter()
    with torch.no_grad():
        F.cross_entropy(x, t)
    t1 = time.perf_counter()
    F.cross_entropy(x, t).backward()
    t2 = time.perf_counter()
    x.grad = None
    best_f, best_fb = min(best_f, t1 - t0), min(best_fb, t2 - t1)
ct = ctorch_figures(exe, threads)
print_ratios(threads, [("forward", ct["forward_ms"], best_f * 1e3),
                       ("fwd+bwd", ct["fwd_bwd_ms"], best_fb * 1e3)])
