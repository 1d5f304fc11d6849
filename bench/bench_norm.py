#!/usr/bin/python3
"""Runs bench_norm (ctorch) and the same normalization layers in PyTorch with the same
thread count; prints both and the ratios (PyTorch time / ctorch time: > 1 means ctorch
is faster), in wall-clock and process CPU time.  The two sides alternate ROUNDS times
(default 3) and the best figure of each is kept, so that both see the same machine load.
Usage: bench/bench_norm.py path/to/bench_norm [threads]"""
import os
import sys
import time
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ctorch_figures, print_ratios  # noqa: E402

exe = sys.argv[1]
threads = int(sys.argv[2]) if len(sys.argv) > 2 else torch.get_num_threads()
torch.set_num_threads(threads)
torch.manual_seed(0)
CASES = [("bn2d", nn.BatchNorm2d(64), (64, 64, 28, 28)),
         ("bn1d", nn.BatchNorm1d(256), (64, 256)),
         ("ln", nn.LayerNorm(512), (64, 128, 512)),
         ("gn", nn.GroupNorm(8, 64), (32, 64, 28, 28))]


def torch_figures():
    res = {}
    for name, m, shape in CASES:
        x = torch.randn(*shape, requires_grad=True)
        ones = torch.ones(*shape)
        f = fb = cf = cfb = 1e9
        for _ in range(20):
            t0, c0 = time.perf_counter(), time.process_time()
            with torch.no_grad():
                m(x)
            t1, c1 = time.perf_counter(), time.process_time()
            m(x).backward(ones)
            t2, c2 = time.perf_counter(), time.process_time()
            x.grad = None
            m.zero_grad()
            f, fb, cf, cfb = min(f, t1 - t0), min(fb, t2 - t1), min(cf, c1 - c0), min(cfb, c2 - c1)
        res.update({name + "_forward_ms": f * 1e3, name + "_fwd_bwd_ms": fb * 1e3,
                    name + "_forward_cpu_ms": cf * 1e3, name + "_fwd_bwd_cpu_ms": cfb * 1e3})
    return res


ct, pt = {}, {}
for _ in range(int(os.environ.get("ROUNDS", 3))):
    for mine, theirs in ((ct, ctorch_figures(exe, threads)), (pt, torch_figures())):
        for k, v in theirs.items():
            mine[k] = min(mine.get(k, 1e9), v)
rows = []
for name, _, _ in CASES:
    rows += [(name + " fwd", ct[name + "_forward_ms"], pt[name + "_forward_ms"]),
             (name + " f+b", ct[name + "_fwd_bwd_ms"], pt[name + "_fwd_bwd_ms"])]
for name, _, _ in CASES:
    rows += [(name + " fwd cpu", ct[name + "_forward_cpu_ms"], pt[name + "_forward_cpu_ms"]),
             (name + " f+b cpu", ct[name + "_fwd_bwd_cpu_ms"], pt[name + "_fwd_bwd_cpu_ms"])]
print_ratios(threads, rows)
