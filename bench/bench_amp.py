#!/usr/bin/python3
"""PyTorch's side of bench/bench_amp.c: the same workloads, float32 and under
torch.autocast("cpu", dtype=torch.bfloat16), the same "name<TAB>unit<TAB>value" lines.

    /usr/bin/python3 bench/bench_amp.py [mlp|cnn|lstm|all] [fp32|bf16|both]

Threads: torch.set_num_threads(THREADS, default 2), run with OPENBLAS_NUM_THREADS=1.
amp_<case>_<mode>_peak: PyTorch 1.13 keeps no CPU allocator statistics, so the peak
comes from torch.profiler(profile_memory=True) over one step after the timed ones: the
running sum of every op's self allocations minus frees, in the order the ops began, at
its highest (what the step adds above what it starts with, as ctorch's figure).  An
op's allocations count from its start, so the figure can only err high, by an op's
temporaries at most.  amp_<case>_<mode>_act: what the forward and the loss leave
allocated (the activations), the net of their ops' allocations and frees.  CT_BENCH_QUICK=1: a few steps only."""
import os
import sys
import time

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

QUICK = bool(int(os.environ.get("CT_BENCH_QUICK", "0") or 0))


def make_cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def make_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


class LSTMOut(nn.Module):
    """nn.LSTM's output sequence alone (ct_forward_multi's first output)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 256)

    def forward(self, x):
        return self.lstm(x)[0]


# name: (model, input shape, target, batch, steps)
CASES = {
    "mlp": (make_mlp, (64, 1, 28, 28), "class", 64, 300),
    "cnn": (make_cnn, (64, 1, 28, 28), "class", 64, 40),
    "lstm": (LSTMOut, (64, 32, 64), (64, 32, 256), 32, 10),
}


def forward_loss(model, x, y, bf16):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        out = model(x)
        return (nn.functional.cross_entropy(out, y) if y.dtype == torch.int64
                else nn.functional.mse_loss(out, y))


def train_step(model, opt, x, y, bf16):
    loss = forward_loss(model, x, y, bf16)
    opt.zero_grad()
    loss.backward()
    opt.step()


def step_peak_mb(model, opt, x, y, bf16):
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        train_step(model, opt, x, y, bf16)
    now = peak = 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        now += e.self_cpu_memory_usage
        peak = max(peak, now)
    return peak / (1024.0 * 1024.0)


def activations_mb(model, opt, x, y, bf16):
    """What the forward and the loss leave allocated: the net of their ops' self
    allocations and frees (the activations backward will read, and the loss)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss = forward_loss(model, x, y, bf16)
    net = sum(e.self_cpu_memory_usage for e in prof.events())
    opt.zero_grad()
    loss.backward()
    opt.step()
    return net / (1024.0 * 1024.0)


def run(name, bf16):
    make, shape, target, batch, steps = CASES[name]
    torch.manual_seed(0)
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(shape)
    y = torch.randint(0, 10, (batch,)) if target == "class" else torch.zeros(target)
    warmup, steps = (1, 2) if QUICK else (3, steps)
    for _ in range(warmup):
        train_step(model, opt, x, y, bf16)
    t = time.perf_counter()
    for _ in range(steps):
        train_step(model, opt, x, y, bf16)
    t = time.perf_counter() - t
    mode = "bf16" if bf16 else "fp32"
    peak = step_peak_mb(model, opt, x, y, bf16)
    print(f"amp_{name}_{mode}\tsamples/s\t{batch * steps / t:.1f}")
    print(f"amp_{name}_{mode}_peak\tMB\t{peak:.2f}")
    print(f"amp_{name}_{mode}_act\tMB\t{activations_mb(model, opt, x, y, bf16):.2f}")
    sys.stdout.flush()


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    modes = sys.argv[2] if len(sys.argv) > 2 else "both"
    if (which != "all" and which not in CASES) or modes not in ("fp32", "bf16", "both"):
        sys.exit(f"usage: {sys.argv[0]} [mlp|cnn|lstm|all] [fp32|bf16|both]")
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    print(f"# PyTorch {torch.__version__} threads {torch.get_num_threads()}")
    for name in CASES:
        if which not in ("all", name):
            continue
        for bf16 in ((False,) if modes == "fp32" else (True,) if modes == "bf16" else (False, True)):
            run(name, bf16)


if __name__ == "__main__":
    main()
