#!/usr/bin/python3
"""PyTorch's side of the ctorch benchmarks: the cases of bench/bench.c, same names,
same inputs, same "name<TAB>unit<TAB>value" lines, PyTorch called from Python.

    /usr/bin/python3 bench/torch_ref.py [name-substring]   (threads: OMP_NUM_THREADS)

Timing as in bench.c: iterations doubled until one run takes MIN_SECONDS, best of
REPEATS runs."""
import os
import sys
import time

import torch

REPEATS = 5
MIN_SECONDS = 0.2
BIG = 16 << 20
CHAIN = 1000


def filled(shape, requires_grad=False):
    """The values of bench.c's filled(): ((i * 7919) % 2001 - 1000) / 1000."""
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(n, dtype=torch.int64)
    v = ((i * 7919) % 2001 - 1000).to(torch.float32) / 1000.0
    return v.reshape(shape).requires_grad_(requires_grad)


def time_case(run):
    run(1)
    iters = 1
    while True:
        t0 = time.perf_counter()
        run(iters)
        t = time.perf_counter() - t0
        if t >= MIN_SECONDS or iters >= 1 << 30:
            break
        iters *= 8 if t <= 0 or MIN_SECONDS / t > 8 else 2
    best = t / iters
    for _ in range(REPEATS - 1):
        t0 = time.perf_counter()
        run(iters)
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def add_small(a, b):
    def run(iters):
        for _ in range(iters):
            a + b
    return run


def add_small_alive(a, b):
    """A thousand results (and their graph nodes) alive before they are freed."""
    def run(iters):
        for i in range(0, iters, 1000):
            kept = [a + b for _ in range(min(1000, iters - i))]
            del kept
    return run


def backward_per_node():
    a = torch.tensor(1.5, requires_grad=True)
    b = torch.tensor(2.5)
    best = float("inf")
    for _ in range(20):
        y = a
        for _ in range(CHAIN):
            y = y + b
        t0 = time.perf_counter()
        y.backward()
        best = min(best, time.perf_counter() - t0)
        a.grad = None
    return best / CHAIN * 1e9


def loop(fn):
    def run(iters):
        for _ in range(iters):
            fn()
    return run


def cases():
    """(name, unit, make) where make() returns (run, how, work) or a figure itself."""
    def scalar(grad):
        return add_small(torch.tensor(1.5, requires_grad=grad), torch.tensor(2.5))

    def mm_small(autocast):
        a, b = torch.ones(1, 1), torch.ones(1, 1)
        def run(iters):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                for _ in range(iters):
                    torch.mm(a, b)
        return run

    def big(op, work):
        def make():
            a, b = filled((BIG,)), filled((BIG,))
            return loop(lambda: op(a, b)), "GBPS", work
        return make

    def gemm(n):
        a, b = filled((n, n)), filled((n, n))
        return loop(lambda: torch.mm(a, b)), "GFLOPS", 2.0 * n ** 3

    conv_flop = 2.0 * 64 * 64 * 28 * 28 * 32 * 9

    def conv(backward):
        x = filled((64, 32, 28, 28), True)
        w = filled((64, 32, 3, 3), True)
        bias = filled((64,), True)
        if backward:
            f = lambda: torch.nn.functional.conv2d(x, w, bias, padding=1).sum().backward()
            return loop(f), "MS", 3 * conv_flop
        def fwd():
            with torch.no_grad():
                torch.nn.functional.conv2d(x, w, bias, padding=1)
        return loop(fwd), "MS", conv_flop

    def softmax():
        a = filled((4096, 1024))
        return loop(lambda: torch.softmax(a, -1)), "GBPS", 2.0 * 4 * 4096 * 1024

    return [
        ("add_1elem_nograd", "ns/op", lambda: (scalar(False), "NS", 0)),
        ("add_1elem_grad", "ns/op", lambda: (scalar(True), "NS", 0)),
        ("add_1elem_grad_1000alive", "ns/op",
         lambda: (add_small_alive(torch.tensor(1.5, requires_grad=True), torch.tensor(2.5)), "NS", 0)),
        ("mm_1x1_nograd", "ns/op", lambda: (mm_small(False), "NS", 0)),
        ("mm_1x1_autocast_bf16", "ns/op", lambda: (mm_small(True), "NS", 0)),
        ("backward_per_node", "ns/node", backward_per_node),
        ("add_16M", "GB/s", big(lambda a, b: a + b, 3.0 * 4 * BIG)),
        ("neg_16M", "GB/s", big(lambda a, b: torch.neg(a), 2.0 * 4 * BIG)),
        ("relu_16M", "GB/s", big(lambda a, b: torch.relu(a), 2.0 * 4 * BIG)),
        ("exp_16M", "GB/s", big(lambda a, b: torch.exp(a), 2.0 * 4 * BIG)),
        ("sum_16M", "GB/s", big(lambda a, b: torch.sum(a), 4.0 * BIG)),
        ("softmax_4096x1024", "GB/s", softmax),
        ("gemm_256", "GFLOP/s", lambda: gemm(256)),
        ("gemm_1024", "GFLOP/s", lambda: gemm(1024)),
        ("gemm_2048", "GFLOP/s", lambda: gemm(2048)),
        ("conv2d_fwd", "ms", lambda: conv(False)),
        ("conv2d_fwd_bwd", "ms", lambda: conv(True)),
    ]


def main():
    threads = int(os.environ.get("OMP_NUM_THREADS", "0")) or os.cpu_count()
    torch.set_num_threads(threads)
    pattern = sys.argv[1] if len(sys.argv) > 1 else ""
    print(f"# PyTorch {torch.__version__} bench, threads {torch.get_num_threads()}")
    for name, unit, make in cases():
        if pattern not in name:
            continue
        made = make()
        if isinstance(made, float):
            value = made
        else:
            run, how, work = made
            s = time_case(run)
            value = {"NS": s * 1e9, "MS": s * 1e3}.get(how, work / s * 1e-9 if s else 0)
        print(f"{name}\t{unit}\t{value:.4g}", flush=True)


if __name__ == "__main__":
    main()
