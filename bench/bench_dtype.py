#!/usr/bin/python3
"""Reduced precision against float32, ctorch beside PyTorch in one table: add, exp
and sum of 16M elements, softmax and layer_norm (weight and bias) over the rows of
[16384, 1024], a 1024 x 1024 matmul, batch_norm (training, weight and bias) of
[64, 128, 28, 28], a 3x3 conv2d of [8, 64, 56, 56] with 64 filters (padding 1), in
float32, bfloat16 and float16 (medians of 5 runs each).  ctorch's figures
come from bench_dtype (bench/bench_dtype.c), run first; PyTorch runs in this process
with torch.set_num_threads(n) and OPENBLAS_NUM_THREADS=1, its best setting.

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_dtype.py [build/bench/bench_dtype [threads]]
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ctorch_figures  # noqa: E402

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before torch loads OpenBLAS
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

exe = sys.argv[1] if len(sys.argv) > 1 else "build/bench/bench_dtype"
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
OPS = [("add", "add 16M"), ("exp", "exp 16M"), ("sum", "sum 16M"),
       ("softmax", "softmax [16384, 1024] dim 1"), ("matmul", "matmul 1024 x 1024"),
       ("layer_norm", "layer_norm [16384, 1024]"), ("batch_norm", "batch_norm [64, 128, 28, 28]"),
       ("conv2d", "conv2d [8, 64, 56, 56] 3x3")]
DTYPES = [("float32", torch.float32), ("bfloat16", torch.bfloat16), ("float16", torch.float16)]


def median(fn, reps=5):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def pytorch_figures():
    res = {}
    for name, dt in DTYPES:
        n = 16 << 20
        x = (torch.rand(n) - 0.5).to(dt)
        y = torch.rand(n).to(dt)
        rows = x.view(16384, 1024)
        a = torch.randn(1024, 1024).to(dt)
        b = torch.randn(1024, 1024).to(dt)
        img_conv = torch.randn(8, 64, 56, 56).to(dt)
        wconv = torch.randn(64, 64, 3, 3).to(dt)
        w = torch.rand(1024).to(dt)
        img = x[:64 * 128 * 28 * 28].view(64, 128, 28, 28)
        fns = {"add": lambda: x + y, "exp": lambda: torch.exp(x), "sum": lambda: x.sum(),
               "softmax": lambda: torch.softmax(rows, 1), "matmul": lambda: a @ b,
               "layer_norm": lambda: F.layer_norm(rows, (1024,), w, w),
               "batch_norm": lambda: F.batch_norm(img, None, None, w[:128], w[:128], training=True),
               "conv2d": lambda: F.conv2d(img_conv, wconv, padding=1)}
        for op, fn in fns.items():
            try:
                res[op + "." + name] = median(fn) * 1e3
            except RuntimeError:  # no kernel for this dtype in this PyTorch
                res[op + "." + name] = None
    return res


def cpu_line():
    with open("/proc/cpuinfo") as f:
        info = f.read()
    model = next(l for l in info.splitlines() if l.startswith("model name")).split(":", 1)[1].strip()
    flags = set(next(l for l in info.splitlines() if l.startswith("flags")).split(":", 1)[1].split())
    want = ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_bf16",
            "avx512_fp16", "amx_bf16"]
    return "%s, %d cores visible; %s" % (model, os.cpu_count(), " ".join(
        f if f in flags else "no-" + f for f in want))


ct = ctorch_figures(exe, threads)
torch.set_num_threads(threads)
pt = pytorch_figures()


def fmt(v, spec="%9.2f"):
    return spec % v if v is not None else "%9s" % "n/a"


def ratio(a, b):
    return "%.2f" % (a / b) if a is not None and b is not None else "n/a"


print("cpu: " + cpu_line())
print("threads %d, median of 5 runs (ms); ctorch %s, PyTorch %s; PyTorch/ctorch > 1: ctorch "
      "is faster; vs f32: the dtype's time over float32's on the same side" %
      (threads, os.path.basename(exe), torch.__version__))
print("| %-28s | %-8s | %9s | %9s | %14s | %12s | %13s |" % (
    "op", "dtype", "ctorch", "PyTorch", "PyTorch/ctorch", "ctorch vs f32", "PyTorch vs f32"))
print("|%s|%s|%s|%s|%s|%s|%s|" % ("-" * 30, "-" * 10, "-" * 10 + ":", "-" * 10 + ":",
                                   "-" * 15 + ":", "-" * 13 + ":", "-" * 14 + ":"))
for op, label in OPS:
    for name, _ in DTYPES:
        k, k32 = op + "." + name, op + ".float32"
        print("| %-28s | %-8s | %9s | %9s | %14s | %12s | %13s |" % (
            label, name, fmt(ct.get(k)), fmt(pt.get(k)), ratio(pt.get(k), ct.get(k)),
            ratio(ct.get(k), ct.get(k32)), ratio(pt.get(k), pt.get(k32))))
