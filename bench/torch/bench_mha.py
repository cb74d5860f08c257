#!/usr/bin/python3
"""PyTorch peer of bench/bench_mha.c: one MHA training step (forward,
backward, Adam update) with causal self-attention, float32, 2 threads.

    /usr/bin/python3 bench/torch/bench_mha.py --B 16 --L 128 --D 512 --H 8 \
        [--impl manual|nn_mha] [--reps 20] [--warmup 3] [--budget 10]

impl manual: MHA written as in DESIGN.md (packed in_proj Linear, split heads,
  scores = q k^T * scale, masked_fill(causal, -inf), softmax, @ v, merge,
  out_proj): the twin of tapegrad's fused mode.
impl nn_mha: torch.nn.MultiheadAttention(batch_first=True) with a causal
  attn_mask, for reference (torch 1.13 has no F.scaled_dot_product_attention).
Loss = out.mean(); step = zero_grad, forward, backward, Adam.step.
Prints one "ROW key=value ..." line, the same keys as bench_mha.
"""
import argparse
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class ManualMHA(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.dk = d_model // n_heads
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, causal):
        B, L, D = x.shape
        q, k, v = self.in_proj(x).split(D, dim=-1)
        q = q.view(B, L, self.h, self.dk).transpose(1, 2)
        k = k.view(B, L, self.h, self.dk).transpose(1, 2)
        v = v.view(B, L, self.h, self.dk).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.dk))
        s = s.masked_fill(causal, float("-inf"))
        a = F.softmax(s, dim=-1)
        o = (a @ v).transpose(1, 2).reshape(B, L, D)
        return self.out_proj(o)


class TorchMHA(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x, causal):
        out, _ = self.mha(x, x, x, attn_mask=causal, need_weights=False)
        return out


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(step, warmup, reps, budget, min_reps=3):
    for _ in range(warmup):
        step()
    times = []
    start = time.perf_counter()
    while len(times) < reps:
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        times.append((t1 - t0) * 1e3)
        if len(times) >= min_reps and t1 - start > budget:
            break
    times.sort()
    n = len(times)
    med = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return med, times[0], n


def gemm_flops(B, L, D, H):
    dk = D // H
    fwd = 2 * B * L * D * 3 * D + 2 * 2 * B * H * L * L * dk + 2 * B * L * D * D
    return 3 * fwd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--B", type=int, default=16)
    ap.add_argument("--L", type=int, default=128)
    ap.add_argument("--D", type=int, default=512)
    ap.add_argument("--H", type=int, default=8)
    ap.add_argument("--impl", choices=["manual", "nn_mha"], default="manual")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--tag", default="")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    # Baseline after torch's own start-up and one small matmul (BLAS buffers).
    (torch.randn(256, 256) @ torch.randn(256, 256)).sum().item()
    base = rss_mib()

    model = ManualMHA(a.D, a.H) if a.impl == "manual" else TorchMHA(a.D, a.H)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(a.B, a.L, a.D)
    causal = torch.triu(torch.ones(a.L, a.L, dtype=torch.bool), diagonal=1)

    def step():
        opt.zero_grad()
        out = model(x, causal)
        loss = out.mean()
        loss.backward()
        opt.step()

    ms, min_ms, n = measure(step, a.warmup, a.reps, a.budget)
    peak = peak_rss_mib()
    gflops = gemm_flops(a.B, a.L, a.D, a.H) / (ms * 1e-3) / 1e9
    print(f"ROW bench=mha impl=torch_{a.impl} tag={a.tag or '-'} B={a.B} L={a.L} D={a.D} H={a.H} "
          f"threads={torch.get_num_threads()} reps={n} ms={ms:.4f} min_ms={min_ms:.4f} "
          f"gflops={gflops:.2f} peak_rss_mib={peak:.1f} base_rss_mib={base:.1f} "
          f"rss_delta_mib={peak - base:.1f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
