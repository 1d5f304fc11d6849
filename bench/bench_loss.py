#!/usr/bin/python3
"""Runs bench_loss (ctorch) and the same losses in PyTorch with the same thread count:
cross_entropy of logits [512, 1000], and mse, smooth_l1, huber, binary_cross_entropy
and binary_cross_entropy_with_logits of an input [512, 1000], float32, mean reduction;
prints both and the ratios (PyTorch time / ctorch time: > 1 means ctorch is faster).
Usage: bench/bench_loss.py path/to/bench_loss [threads]"""
import os
import sys
import time
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ctorch_figures  # noqa: E402

exe = sys.argv[1]
threads = int(sys.argv[2]) if len(sys.argv) > 2 else torch.get_num_threads()
torch.set_num_threads(threads)
torch.manual_seed(0)
cases = [
    ("ce", F.cross_entropy, torch.randn(512, 1000), torch.randint(0, 1000, (512,))),
    ("mse", F.mse_loss, torch.randn(512, 1000), torch.randn(512, 1000)),
    ("sl1", F.smooth_l1_loss, torch.randn(512, 1000), torch.randn(512, 1000)),
    ("huber", F.huber_loss, torch.randn(512, 1000), torch.randn(512, 1000)),
    ("bce", F.binary_cross_entropy, torch.rand(512, 1000), torch.rand(512, 1000)),
    ("bcel", F.binary_cross_entropy_with_logits, torch.randn(512, 1000), torch.rand(512, 1000)),
]
torch_ms = {}
for name, f, x, t in cases:
    x.requires_grad_(True)
    best_f = best_fb = 1e9
    for _ in range(50):
        t0 = time.perf_counter()
        with torch.no_grad():
            f(x, t)
        t1 = time.perf_counter()
        f(x, t).backward()
        t2 = time.perf_counter()
        x.grad = None
        best_f, best_fb = min(best_f, t1 - t0), min(best_fb, t2 - t1)
    torch_ms[name] = (best_f * 1e3, best_fb * 1e3)
ct = ctorch_figures(exe, threads)
print("threads %d" % threads)
print("%-14s %10s %10s %8s" % ("", "ctorch ms", "torch ms", "ratio"))
for name, _, _, _ in cases:
    for label, key, pt in (("fwd", "_forward_ms", torch_ms[name][0]),
                           ("fwd+bwd", "_fwd_bwd_ms", torch_ms[name][1])):
        print("%-14s %10.3f %10.3f %8.2f" % (name + " " + label, ct[name + key], pt,
                                            pt / ct[name + key]))
