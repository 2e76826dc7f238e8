#!/usr/bin/env python3
"""PyTorch on the workloads of a `tj-bench --device cuda --json FILE` run, same shapes, same GPU:
prints a side-by-side table (markdown) of tensorjit's fused kernels and PyTorch's eager kernels
(its native kernel, and the same computation composed from primitives), each as a fraction of
its own device-to-device copy.

    python3 scripts/gpu_torch.py bench.json > side_by_side.md
"""
import json
import math
import re
import sys

import torch
import torch.nn.functional as F


def elements(text):
    """'256M' -> 268435456, '64K' -> 65536, '1000' -> 1000."""
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    if not m:
        raise ValueError(text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def dims(text):
    return [int(d) for d in text.split(",")[0].strip().split("x")]


def median_ms(fn, reps=9):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def gelu_tanh(v):
    return 0.5 * v * (1 + torch.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def workloads(shape_of):
    """name -> (bytes moved, composed fn, native fn), for the workloads tj-bench ran."""
    dev = "cuda"
    out = {}
    if "gelu_tanh" in shape_of:
        x = torch.rand(elements(shape_of["gelu_tanh"]), device=dev)
        out["gelu_tanh"] = (2 * x.numel() * 4, lambda: gelu_tanh(x),
                            lambda: F.gelu(x, approximate="tanh"))
    if "sum" in shape_of:
        s = torch.rand(elements(shape_of["sum"]), device=dev)
        out["sum"] = (s.numel() * 4, lambda: s.sum(), lambda: s.sum())
    if "softmax" in shape_of:
        w = torch.rand(*dims(shape_of["softmax"]), device=dev)

        def composed():
            e = (w - w.amax(1, keepdim=True)).exp()
            return e / e.sum(1, keepdim=True)
        out["softmax"] = (2 * w.numel() * 4, composed, lambda: F.softmax(w, 1))
    if "layer_norm" in shape_of:
        m = torch.rand(*dims(shape_of["layer_norm"]), device=dev)
        g, b = torch.rand(m.shape[1], device=dev), torch.rand(m.shape[1], device=dev)

        def composed():
            mu = m.mean(1, keepdim=True)
            var = m.var(1, unbiased=False, keepdim=True)
            return (m - mu) / torch.sqrt(var + 1e-5) * g + b
        out["layer_norm"] = (2 * m.numel() * 4, composed,
                             lambda: F.layer_norm(m, (m.shape[1],), g, b))
    if "cumsum" in shape_of:
        c = torch.rand(*dims(shape_of["cumsum"]), device=dev)
        out["cumsum"] = (2 * c.numel() * 4, lambda: c.cumsum(1), lambda: c.cumsum(1))
    if "transposed" in shape_of:
        t = torch.rand(*dims(shape_of["transposed"]), device=dev)
        # No one kernel: the product, then the sum in place.
        out["transposed"] = (2 * t.numel() * 4, lambda: t.t() * 2 + 1,
                             lambda: (t.t() * 2).add_(1))
    return out


def main():
    with open(sys.argv[1]) as f:
        bench = json.load(f)
    torch.backends.cuda.matmul.allow_tf32 = False
    shape_of = {r["workload"]: r["shape"] for r in bench["rows"] + bench.get("products", [])}
    fused = {r["workload"]: r for r in bench["rows"] if r["variant"] == "fused"}
    probe = torch.rand(1 << 26, device="cuda")
    clone_gbps = 2 * probe.numel() * 4 / (median_ms(lambda: probe.clone()) * 1e-3) / 1e9
    del probe
    print(f"# tensorjit and PyTorch {torch.__version__} on {torch.cuda.get_device_name()}\n")
    print(f"tensorjit's copy: {bench['copy_gbps']:.0f} GB/s; PyTorch's clone: {clone_gbps:.0f} GB/s."
          " Fractions are of each one's own copy; times are medians of 9.\n")
    print("| workload | shape | tensorjit fused | PyTorch native | PyTorch composed |")
    print("| --- | --- | --- | --- | --- |")
    for name, (nbytes, composed, native) in workloads(shape_of).items():
        cells = []
        if name in fused:
            r = fused[name]
            cells.append(f"{r['ms']:.3f} ms, {100 * r['fraction_of_copy']:.0f}%")
        else:
            cells.append("—")
        for fn in (native, composed):
            ms = median_ms(fn)
            cells.append(f"{ms:.3f} ms, {100 * nbytes / (ms * 1e-3) / 1e9 / clone_gbps:.0f}%")
        print(f"| {name} | {shape_of[name]} | " + " | ".join(cells) + " |")
    for r in bench.get("products", []):
        if r["workload"] == "matmul" and r["variant"].startswith("tensorjit"):
            print(f"\ntensorjit matmul ({r['shape']}, {r['variant']}): {r['gflops']:.0f} GFLOP/s")
    for n in (1024, 8192):
        a, b = torch.rand(n, n, device="cuda"), torch.rand(n, n, device="cuda")
        ms = median_ms(lambda: a @ b, reps=5)
        print(f"PyTorch matmul {n}^3 (no TF32): {2 * n ** 3 / (ms * 1e-3) / 1e9:.0f} GFLOP/s")
    if "compile_ms_median" in bench:
        print(f"\ntensorjit compile of a new kernel: {bench['compile_ms_median']:.1f} ms;"
              f" a cached 16-element expression: {bench.get('cache_hit_us_median', math.nan):.1f} µs")


if __name__ == "__main__":
    main()
