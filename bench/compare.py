"""Shared by the bench_*.py scripts: run a ctorch bench program and print its
figures beside PyTorch's with ratios (PyTorch time / ctorch time: > 1 means ctorch
is faster)."""
import subprocess


def ctorch_figures(exe, threads):
    """The `name value` lines a bench program prints, as a dict of floats."""
    out = subprocess.run([exe, str(threads)], capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in (l.split() for l in out.splitlines()
                                     if l and not l.startswith("threads"))}


def print_ratios(threads, rows):
    """rows: (label, ctorch ms, PyTorch ms)."""
    print("threads %d" % threads)
    print("%-12s %10s %10s %8s" % ("", "ctorch ms", "torch ms", "ratio"))
    for label, ct_ms, torch_ms in rows:
        print("%-12s %10.2f %10.2f %8.2f" % (label, ct_ms, torch_ms, torch_ms / ct_ms))
