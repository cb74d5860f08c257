#!/usr/bin/python3
"""PyTorch reference for tg_sample_probs (nn/sample.h, tests/test_sample.c).

Run from the repository root with Debian's python3-torch:
    /usr/bin/python3 bench/torch/make_sample_fixtures.py
Writes tests/fixtures/sample.safetensors (float64): for each case i,
"logits.<i>" [V], "opts.<i>" [3] = (temperature, top_k, top_p) and
"probs.<i>" [V], the distribution sampling draws from; metadata n (cases).

The filter is HuggingFace's top_k_top_p_filtering (transformers <= 4.x,
nanoGPT's sample for top-k) after dividing by the temperature, then softmax:
top-k keeps the logits >= the k-th largest (ties kept), top-p sorts descending,
takes the cumulative softmax and removes the tokens above p shifted right by
one (the first one past p, and always the most likely, kept). The sort is
stable (equal logits in index order), the order tapegrad documents; a
cumulative probability within 1e-7 of p is refused, so rounding cannot move
the boundary between torch and tapegrad. Logits are float32 values, so both
builds read them exactly.
"""
import os

import torch
import torch.nn.functional as F

from st_writer import save_file

OUT = os.path.join("tests", "fixtures", "sample.safetensors")
INF = float("inf")


def filtered_probs(logits, temperature, top_k, top_p):
    logits = logits / temperature
    if top_k > 0:
        top_k = min(top_k, logits.size(-1))
        kth = torch.topk(logits, top_k)[0][..., -1, None]
        logits = logits.masked_fill(logits < kth, -INF)
    if 0 < top_p < 1:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True, stable=True)
        cumulative = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        assert (cumulative - top_p).abs().min() > 1e-7, "a cumulative probability too close to top_p"
        remove = cumulative > top_p
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., 0] = False
        logits = logits.masked_fill(remove.scatter(-1, sorted_indices, remove), -INF)
    return F.softmax(logits, dim=-1)


def f32(x):
    return torch.tensor(x, dtype=torch.float32).to(torch.float64)


def main():
    g = torch.Generator().manual_seed(7)
    rand = lambda v, s=2.0: f32((torch.randn(v, generator=g, dtype=torch.float64) * s).tolist())
    cases = [
        (rand(10), 1.0, 0, 0.0),                      # no filter: softmax
        (rand(10), 0.7, 3, 0.0),                      # temperature + top-k
        (f32([1, 2, 2, 2, 0, -1, 2, 0.5]), 1.0, 2, 0.0),   # top-k 2 keeps all four tied 2s
        (f32([3, 1, -INF, 2, -INF, 0, 1]), 1.0, 0, 0.9),   # -inf entries and top-p
        (rand(16), 1.5, 8, 0.6),                      # temperature, top-k and top-p together
        (f32([0, 1, 1, 1, 0.5, -2]), 1.0, 0, 0.3),         # top-p through ties: the stable order decides
        (rand(7), 0.9, 7, 0.0),                       # top-k = V: off
        (rand(12), 1.0, 20, 0.0),                     # top-k > V: off
        (rand(9), 1.0, 0, 0.01),                      # a tiny top-p keeps the most likely alone
        (rand(9), 2.0, 1, 0.0),                       # top-k 1
        (rand(50, 3.0), 0.8, 0, 0.85),                # a wider row
        (f32([-1, -INF, 4, 4, -INF]), 0.5, 1, 0.3),        # -inf, tied maxima, both filters
    ]
    tensors = {}
    for i, (logits, temperature, top_k, top_p) in enumerate(cases):
        tensors[f"logits.{i}"] = logits
        tensors[f"opts.{i}"] = torch.tensor([temperature, top_k, top_p], dtype=torch.float64)
        tensors[f"probs.{i}"] = filtered_probs(logits, temperature, top_k, top_p)
    save_file(tensors, OUT, metadata={"n": len(cases)})
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
