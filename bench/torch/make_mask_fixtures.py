#!/usr/bin/python3
"""PyTorch reference fixtures for attention masks as tensors (tests/test_mask_heads.c).

Run from the repository root with Debian's python3-torch:
    /usr/bin/python3 bench/torch/make_mask_fixtures.py
Writes float64 safetensors files into tests/fixtures/ in the format of
make_attn_fixtures.py's nn.MultiheadAttention files (nn.MultiheadAttention's
state_dict names under "attn.", "xq", "xkv", "xv", "seed", "out", "weights"
[B,H,Lq,Lk'], "grad.<name>"), plus the masks handed to the module:
"attn_mask" and "key_padding_mask", stored as float64 (a bool mask as 0/1,
metadata attn_mask_bool / key_padding_bool = 1):

  mha_mask_heads.safetensors      nn.MultiheadAttention(6, 3), self-attention
                                  with a per-head bool attn_mask [B*H, L, L]
                                  (True = not allowed) and a bool
                                  key_padding_mask [B, L] (True = ignore)
  mha_mask_heads_float.safetensors
                                  nn.MultiheadAttention(6, 3, add_bias_kv=True,
                                  add_zero_attn=True), cross-attention with a
                                  per-head float attn_mask [B*H, Lq, Lk] (-inf
                                  entries) and a bool key_padding_mask; the
                                  appended keys see neither
  mha_mask_padding_float.safetensors
                                  nn.MultiheadAttention(6, 3), self-attention with
                                  a float key_padding_mask [B, L] (added to the
                                  scores, -inf entries) and no attn_mask
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
from make_nn_fixtures import OUT_DIR, jitter, write_safetensors  # noqa: E402

torch.set_default_dtype(torch.float64)


def fixture(name, mha, xq, xkv, attn_mask, kpm, meta):
    ins = [x.clone().requires_grad_(True) for x in (xq, xkv)]
    if xkv is xq:  # self-attention: one input, its grad the sum of the three uses
        ins[1] = ins[0]
    out, w = mha(ins[0], ins[1], ins[1], key_padding_mask=kpm, attn_mask=attn_mask, need_weights=True,
                 average_attn_weights=False)
    assert torch.isfinite(out).all()
    seed = torch.rand_like(out) * 2 - 1
    (out * seed).sum().backward()
    t = {"attn." + k: v for k, v in mha.state_dict().items()}
    t.update({"xq": ins[0], "seed": seed, "out": out, "weights": w, "grad.xq": ins[0].grad,
              "key_padding_mask": kpm.to(torch.float64)})
    if attn_mask is not None:
        t["attn_mask"] = attn_mask.to(torch.float64)
    if xkv is not xq:
        t.update({"xkv": ins[1], "grad.xkv": ins[1].grad})
    for k, p in mha.named_parameters():
        t["grad.attn." + k] = p.grad
    meta = dict(meta, causal=0, attn_mask_bool=int(attn_mask is not None and attn_mask.dtype == torch.bool),
                key_padding_bool=int(kpm.dtype == torch.bool))
    write_safetensors(os.path.join(OUT_DIR, name), t, meta)


def make():
    torch.manual_seed(11)
    B, H, L, D = 2, 3, 5, 6
    mha = nn.MultiheadAttention(D, H, batch_first=True)
    jitter(mha)
    attn_mask = torch.rand(B * H, L, L) < 0.4
    attn_mask[:, :, 0] = False  # every query sees key 0 (no all-masked row: PyTorch gives NaN there)
    kpm = torch.zeros(B, L, dtype=torch.bool)
    kpm[1, 3:] = True
    x = torch.randn(B, L, D)
    fixture("mha_mask_heads.safetensors", mha, x, x, attn_mask, kpm, dict(n_heads=H, d_model=D, d_head=D // H))

    mha = nn.MultiheadAttention(D, H, add_bias_kv=True, add_zero_attn=True, batch_first=True)
    jitter(mha)
    Lq, Lk = 4, 6
    attn_mask = torch.randn(B * H, Lq, Lk) * 0.5
    attn_mask[torch.rand(B * H, Lq, Lk) < 0.3] = -float("inf")
    kpm = torch.zeros(B, Lk, dtype=torch.bool)
    kpm[0, 4] = True
    fixture("mha_mask_heads_float.safetensors", mha, torch.randn(B, Lq, D), torch.randn(B, Lk, D), attn_mask, kpm,
            dict(n_heads=H, d_model=D, d_head=D // H, add_bias_kv=1, add_zero_attn=1))

    # torch 1.13 adds a float key_padding_mask only when there is no attn_mask
    # (with one it requires bool); PyTorch 2 adds it in every case, as tapegrad does
    mha = nn.MultiheadAttention(D, H, batch_first=True)
    jitter(mha)
    kpm = torch.randn(B, L) * 0.5
    kpm[1, 2] = -float("inf")
    x = torch.randn(B, L, D)
    fixture("mha_mask_padding_float.safetensors", mha, x, x, None, kpm, dict(n_heads=H, d_model=D, d_head=D // H))


if __name__ == "__main__":
    os.makedirs(OUT_DIR, exist_ok=True)
    make()
