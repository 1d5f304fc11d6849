#!/usr/bin/python3
"""PyTorch's side of bench/bench_train.c: the same training workloads, the same
"name<TAB>unit<TAB>value" lines (train_<case>, train_<case>_rss, train_<case>_rss_setup,
train_<case>_rss_growth;
train_<case>_alloc is n/a: PyTorch 1.13 keeps no CPU allocator statistics).

    /usr/bin/python3 bench/bench_train.py [mlp|cnn|lstm|all] [threads]

Fashion-MNIST is read from the IDX files of /usr/share/datasets/fashion-mnist with gzip
and numpy (no torchvision); each sample becomes float32 / 255 [1, 28, 28] in the
Dataset's __getitem__, as ct_tf_to_float does.  CT_BENCH_QUICK=1: a few steps only."""
import gzip
import os
import resource
import sys
import time

import numpy as np
import torch
from torch import nn

ROOT = os.environ.get("CT_DATA_DIR", "/usr/share/datasets/fashion-mnist")
QUICK = bool(int(os.environ.get("CT_BENCH_QUICK", "0") or 0))


def read_idx(path):
    """An IDX file as a uint8 array, read into it in 1 MB pieces (no whole-file copy:
    the peak RSS is the data's, as ctorch's)."""
    with gzip.open(path, "rb") as f:
        head = f.read(4)
        dims = [int.from_bytes(f.read(4), "big") for _ in range(head[3])]
        arr = np.empty(dims, dtype=np.uint8)
        view, at = memoryview(arr).cast("B"), 0
        while at < arr.size:
            n = f.readinto(view[at:at + (1 << 20)])
            if n <= 0:
                raise ValueError(f"{path}: truncated")
            at += n
    return arr


class FashionMNIST(torch.utils.data.Dataset):
    def __init__(self, train=True):
        prefix = "train" if train else "t10k"
        self.images = read_idx(os.path.join(ROOT, prefix + "-images-idx3-ubyte.gz"))
        self.labels = read_idx(os.path.join(ROOT, prefix + "-labels-idx1-ubyte.gz"))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        img = torch.from_numpy(self.images[i]).unsqueeze(0).float().div(255)
        return img, int(self.labels[i])


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def report(name, unit, value, setup_rss):
    print(f"train_{name}\t{unit}\t{value:.1f}")
    print(f"train_{name}_rss\tMB\t{peak_rss_mb():.1f}")
    print(f"train_{name}_rss_setup\tMB\t{setup_rss:.1f}")
    print(f"train_{name}_rss_growth\tMB\t{peak_rss_mb() - setup_rss:.1f}")
    print(f"train_{name}_alloc\tMB\tn/a")
    sys.stdout.flush()


def train_step(model, opt, x, y):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


def bench_mlp():
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                          nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(FashionMNIST(True), batch_size=64, shuffle=True,
                                         num_workers=0, generator=torch.Generator().manual_seed(0))
    limit = 64 * 5 if QUICK else float("inf")
    seen = 0
    setup_rss = peak_rss_mb()
    t = time.perf_counter()
    for x, y in loader:
        train_step(model, opt, x, y)
        seen += len(y)
        if seen >= limit:
            break
    t = time.perf_counter() - t
    report("mlp", "samples/s", seen / t, setup_rss)


def bench_cnn():
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))
    steps = 2 if QUICK else 300
    setup_rss = peak_rss_mb()
    for _ in range(3):
        train_step(model, opt, x, y)
    t = time.perf_counter()
    for _ in range(steps):
        train_step(model, opt, x, y)
    t = time.perf_counter() - t
    report("cnn", "samples/s", 64.0 * steps / t, setup_rss)


def bench_lstm():
    lstm = nn.LSTM(64, 256)
    x = torch.randn(64, 32, 64)  # [T, B, input]
    warmup, iters = (1, 1) if QUICK else (2, 10)
    t = 0.0
    setup_rss = peak_rss_mb()
    for i in range(warmup + iters):
        t0 = time.perf_counter()
        out, _ = lstm(x)
        out.sum().backward()
        if i >= warmup:
            t += time.perf_counter() - t0
    report("lstm", "ms", 1e3 * t / iters, setup_rss)


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else int(os.environ.get("THREADS") or 2)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print(f"# PyTorch {torch.__version__} threads {torch.get_num_threads()}")
    cases = {"mlp": bench_mlp, "cnn": bench_cnn, "lstm": bench_lstm}
    if which != "all" and which not in cases:
        sys.exit(f"usage: {sys.argv[0]} [mlp|cnn|lstm|all] [threads]")
    for name, fn in cases.items():
        if which in ("all", name):
            fn()


if __name__ == "__main__":
    main()
