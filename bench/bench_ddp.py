#!/usr/bin/python3
"""PyTorch's side of bench/bench_ddp.c: data-parallel training throughput with
DistributedDataParallel over gloo, the same "name<TAB>unit<TAB>value" lines.

    /usr/bin/python3 bench/bench_ddp.py [mlp|cnn|all] [1x2|2x1|all]

  mlp  MLP 784-256-128-10 (ReLU), cross-entropy, Adam 1e-3 (bench_train's)
  cnn  the CNN of examples/fashion_mnist.c: conv(1,32,3,p1)-relu-maxpool2-
       conv(32,64,3,p1)-relu-maxpool2-flatten-linear(3136,128)-relu-linear(128,10), Adam
  1x2  one process, 2 intra-op threads, no DDP, batch 64
  2x1  two processes (started here, gloo over 127.0.0.1), 1 thread each, DDP, batch 32
       per rank (global 64)

Each step trains on one fixed random Fashion-MNIST-shaped batch (float [B, 1, 28, 28],
labels in [0, 10)), drawn per rank, so that the figure is the model's and DDP's, not
the data pipeline's.  After WARMUP steps, STEPS steps are timed between two barriers,
REPS times (env, default 3; the fastest kept: the machine may be shared);
ddp_<case>_<config> is the global rate (every rank's samples over rank 0's time).
Threads follow PyTorch's best setting: torch.set_num_threads(n) with
OPENBLAS_NUM_THREADS=1 (this script sets it before importing torch).
CT_BENCH_QUICK=1: a few steps only (the figures mean nothing)."""
import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch import nn  # noqa: E402

QUICK = bool(int(os.environ.get("CT_BENCH_QUICK", "0") or 0))
WARMUP = 1 if QUICK else 5
STEPS = {"mlp": 5 if QUICK else 1000, "cnn": 2 if QUICK else 150}
REPS = 1 if QUICK else int(os.environ.get("REPS") or 3)
GLOBAL_BATCH = 64


def make_model(case):
    if case == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                             nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def timed_training(case, model, batch, rank, barrier):
    """The fewest seconds of REPS runs of STEPS Adam steps on one random batch, after
    WARMUP untimed steps."""
    gen = torch.Generator().manual_seed(1 + rank)
    x = torch.randn(batch, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(WARMUP):
        step()
    best = float("inf")
    for _ in range(REPS):
        barrier()
        t = time.perf_counter()
        for _ in range(STEPS[case]):
            step()
        barrier()
        best = min(best, time.perf_counter() - t)
    return best


def report(case, config, seconds):
    print(f"ddp_{case}_{config}\tsamples/s\t{GLOBAL_BATCH * STEPS[case] / seconds:.1f}")
    sys.stdout.flush()


def run_plain(case, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    report(case, f"1x{threads}", timed_training(case, make_model(case), GLOBAL_BATCH, 0, lambda: None))


def ddp_worker(rank, world, port, case, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(make_model(case))
    seconds = timed_training(case, model, GLOBAL_BATCH // world, rank, dist.barrier)
    if rank == 0:
        out.put(seconds)
    dist.destroy_process_group()


def run_ddp(case, world):
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    port = 29500 + os.getpid() % 1000  # two runs side by side need not share one
    mp.start_processes(ddp_worker, args=(world, port, case, out), nprocs=world,
                       start_method="spawn")
    report(case, f"{world}x1", out.get())


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else "all"
    config = sys.argv[2] if len(sys.argv) > 2 else "all"
    if case not in ("mlp", "cnn", "all") or config not in ("1x2", "2x1", "all"):
        sys.exit(f"usage: {sys.argv[0]} [mlp|cnn|all] [1x2|2x1|all]")
    print(f"# PyTorch {torch.__version__} DDP gloo")
    for c in ("mlp", "cnn"):
        if case in ("all", c):
            if config in ("all", "1x2"):
                run_plain(c, 2)
            if config in ("all", "2x1"):
                run_ddp(c, 2)


if __name__ == "__main__":
    main()
