#!/usr/bin/python3
"""Runs bench_conv (ctorch) and the same conv2d in PyTorch with the same thread
count; prints both and the ratios (PyTorch time / ctorch time: > 1 means ctorch is
faster); with one thread also in CPU time.  Usage: bench/bench_conv.py path/to/bench_conv [threads]"""
import subprocess
import sys
import time
import torch
import torch.nn.functional as F

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
out = subprocess.run([exe, str(threads)], capture_output=True, text=True, check=True).stdout
ct = dict(l.split() for l in out.splitlines() if l and not l.startswith("threads"))
cf, cfb = float(ct["forward_ms"]), float(ct["fwd_bwd_ms"])
print("threads %d" % threads)
print("%-12s %10s %10s %8s" % ("", "ctorch ms", "torch ms", "ratio"))
print("%-12s %10.2f %10.2f %8.2f" % ("forward", cf, best_f * 1e3, best_f * 1e3 / cf))
print("%-12s %10.2f %10.2f %8.2f" % ("fwd+bwd", cfb, best_fb * 1e3, best_fb * 1e3 / cfb))
if threads == 1:  # CPU time: robust on a loaded machine (with one thread only)
    cf, cfb = float(ct["forward_cpu_ms"]), float(ct["fwd_bwd_cpu_ms"])
    print("%-12s %10.2f %10.2f %8.2f" % ("forward cpu", cf, cpu_f * 1e3, cpu_f * 1e3 / cf))
    print("%-12s %10.2f %10.2f %8.2f" % ("fwd+bwd cpu", cfb, cpu_fb * 1e3, cpu_fb * 1e3 / cfb))
