#!/usr/bin/python3
"""Runs bench_conv (ctorch) and the same conv2d in PyTorch with the same thread
count; prints both and the ratios (PyTorch time / ctorch time: > 1 means ctorch is
faster); with one thread also in CPU time.  Usage: bench/bench_conv.py path/to/bench_conv [threads]"""
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
x = torch.full((64, 32, 28, 28), 0.5, requires_grad=True)
w = torch.full((64, 32, 3, 3), 0.01, requires_grad=True)
b = torch.zeros(64, requires_grad=True)
best_f = best_fb = cpu_f = cpu_fb = 1e9
for _ in range(12):
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.no_grad():
        F.conv2d(x, w, b, padding=1)
    t1, c1 = time.perf_counter(), time.process_time()
    y = F.conv2d(x, w, b, padding=1)
    y.backward(torch.ones_like(y))
    t2, c2 = time.perf_counter(), time.process_time()
    x.grad = w.grad = b.grad = None
    best_f, best_fb = min(best_f, t1 - t0), min(best_fb, t2 - t1)
    cpu_f, cpu_fb = min(cpu_f, c1 - c0), min(cpu_fb, c2 - c1)
ct = ctorch_figures(exe, threads)
rows = [("forward", ct["forward_ms"], best_f * 1e3), ("fwd+bwd", ct["fwd_bwd_ms"], best_fb * 1e3)]
if threads == 1:  # CPU time: robust on a loaded machine (with one thread only)
    rows += [("forward cpu", ct["forward_cpu_ms"], cpu_f * 1e3),
             ("fwd+bwd cpu", ct["fwd_bwd_cpu_ms"], cpu_fb * 1e3)]
print_ratios(threads, rows)
