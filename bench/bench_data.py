#!/usr/bin/python3
"""Runs bench_data (ctorch) and the same pipeline in PyTorch: a full shuffled pass over
Fashion-MNIST train, batch 64, x.float() / 255 then Normalize per sample, one intra-op
thread, num_workers 0, 1, 2.  Prints samples/s of both and the ratio (ctorch / PyTorch:
> 1 means ctorch is faster).  PyTorch's dataset wraps the same uint8 tensor, so no
image decoding is timed on either side.
Usage: bench/bench_data.py path/to/bench_data [root]"""
import gzip
import subprocess
import sys
import time
import torch
from torch.utils.data import DataLoader, Dataset

exe = sys.argv[1]
root = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
torch.set_num_threads(1)


def idx(name, skip):
    with gzip.open("%s/%s.gz" % (root, name)) as f:
        return torch.frombuffer(bytearray(f.read()[skip:]), dtype=torch.uint8)


images = idx("train-images-idx3-ubyte", 16).view(-1, 1, 28, 28)
labels = idx("train-labels-idx1-ubyte", 8).long()


class FashionMNIST(Dataset):
    def __len__(self):
        return len(labels)

    def __getitem__(self, i):
        x = images[i].to(torch.float32).div(255)
        return (x - 0.2860) / 0.3530, labels[i]


out = subprocess.run([exe, "2", "3", root], capture_output=True, text=True, check=True).stdout
ct = {int(l.split()[1]): float(l.split()[3]) for l in out.splitlines() if l.startswith("workers")}
print("%-8s %14s %14s %7s" % ("workers", "ctorch samp/s", "torch samp/s", "ratio"))
for w in (0, 1, 2):
    loader = DataLoader(FashionMNIST(), batch_size=64, shuffle=True, num_workers=w,
                        generator=torch.Generator().manual_seed(0))
    best = 1e9
    for _ in range(3):
        t = time.perf_counter()
        for x, y in loader:
            pass
        best = min(best, time.perf_counter() - t)
    torch_rate = len(labels) / best
    print("%-8d %14.0f %14.0f %7.2f" % (w, ct[w], torch_rate, ct[w] / torch_rate))
