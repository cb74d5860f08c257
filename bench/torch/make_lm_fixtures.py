#!/usr/bin/python3
"""PyTorch reference fixtures for the language-model options of nn/ffn.h and
nn/model.h (tests/test_model.c): gated feed-forward layers and two whole small
models, a LLaMA-style one and a GPT-2 one with a tied head.

Run from the repository root with Debian's python3-torch:
    /usr/bin/python3 bench/torch/make_lm_fixtures.py
Writes float64 safetensors files into tests/fixtures/:

  ffn_swiglu.safetensors   down_proj(silu(gate_proj(x)) * up_proj(x)), no biases
  ffn_geglu.safetensors    down_proj(gelu(gate_proj(x)) * up_proj(x)), with biases
                           (each: "ff.<name>" parameters, "x" [B,T,D], "seed"
                           (the loss is sum(seed * out)), "out", "grad.x",
                           "grad.ff.<name>"; metadata d_model, d_ff, act, no_bias)
  model_llama.safetensors  RMSNorm, grouped-query attention (fused in_proj),
                           RoPE, SwiGLU, no biases
  model_gpt2_tied.safetensors
                           LayerNorm, GELU, learned positions, head.weight the
                           same Parameter as tok_emb.weight: the state_dict
                           names it twice, as PyTorch saves a tied model
                           (each: the twin's state_dict, "ids", "lens",
                           "targets", "logits", "loss", "grad.<name>" of every
                           parameter once; metadata: the tg_model_config)

RMSNorm is written by hand (torch 1.13 has no nn.RMSNorm). Parameters are
PyTorch's default inits plus small noise, so norm weights are not all 1.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from make_nn_fixtures import OUT_DIR, jitter, masks, write_safetensors  # noqa: E402
from make_attn_fixtures import apply_rotary_emb, precompute_freqs_cis, sdpa  # noqa: E402

torch.set_default_dtype(torch.float64)
SWIGLU, GEGLU = 2, 3  # tg_ffn_act


class RMSNorm(nn.Module):
    def __init__(self, D, eps=1e-5):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(D)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class GatedFF(nn.Module):
    def __init__(self, D, dff, act, bias):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(D, dff, bias=bias), nn.Linear(D, dff, bias=bias)
        self.down_proj = nn.Linear(dff, D, bias=bias)
        self.act = F.silu if act == SWIGLU else F.gelu  # erf GELU

    def forward(self, x):
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


class FF(nn.Module):
    def __init__(self, D, dff, bias):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, dff, bias=bias), nn.Linear(dff, D, bias=bias)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Attn(nn.Module):
    """nn/attention.h's fused layout: in_proj rows = H query heads, then Hkv key
    heads, then Hkv value heads, dh rows each."""

    def __init__(self, D, H, Hkv, dh, bias, rope):
        super().__init__()
        self.in_proj_weight = nn.Parameter(torch.empty((H + 2 * Hkv) * dh, D).uniform_(-D ** -0.5, D ** -0.5))
        self.in_proj_bias = nn.Parameter(torch.zeros((H + 2 * Hkv) * dh)) if bias else None
        self.out_proj = nn.Linear(H * dh, D, bias=bias)
        self.H, self.Hkv, self.dh, self.rope = H, Hkv, dh, rope

    def forward(self, x, attn_mask, kpm):
        B, T, _ = x.shape
        H, Hkv, dh = self.H, self.Hkv, self.dh
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)
        q = qkv[..., :H * dh].reshape(B, T, H, dh).transpose(1, 2)
        k = qkv[..., H * dh:(H + Hkv) * dh].reshape(B, T, Hkv, dh).transpose(1, 2)
        v = qkv[..., (H + Hkv) * dh:].reshape(B, T, Hkv, dh).transpose(1, 2)
        if self.rope:
            q, k = apply_rotary_emb(q, k, precompute_freqs_cis(dh, T, 10000.0), dh)
        k, v = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
        o, _ = sdpa(q, k, v, attn_mask, kpm)
        return self.out_proj(o.transpose(1, 2).reshape(B, T, H * dh))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        D, bias = c["d_model"], not c["no_bias"]
        norm = (lambda: RMSNorm(D)) if c["norm"] else (lambda: nn.LayerNorm(D, eps=1e-5))
        self.ln1 = norm()
        self.attn = Attn(D, c["n_heads"], c["n_kv_heads"], D // c["n_heads"], bias, c["pos"] == 1)
        self.ln2 = norm()
        self.ff = GatedFF(D, c["d_ff"], c["ff_act"], bias) if c["ff_act"] in (SWIGLU, GEGLU) else FF(D, c["d_ff"], bias)

    def forward(self, x, attn_mask, kpm):
        x = x + self.attn(self.ln1(x), attn_mask, kpm)
        return x + self.ff(self.ln2(x))


class LM(nn.Module):
    def __init__(self, c):
        super().__init__()
        V, D = c["vocab"], c["d_model"]
        self.tok_emb = nn.Embedding(V, D)
        self.pos_emb = nn.Embedding(c["max_len"], D) if c["pos"] == 0 else None
        self.blocks = nn.ModuleList([Block(c) for _ in range(c["n_layers"])])
        self.ln_f = RMSNorm(D) if c["norm"] else nn.LayerNorm(D, eps=1e-5)
        self.head = nn.Linear(D, V, bias=not c["no_bias"] and not c["tie_weights"])
        if c["tie_weights"]:
            self.head.weight = self.tok_emb.weight  # one Parameter, named twice in the state_dict

    def forward(self, ids, lens):
        T = ids.shape[1]
        attn_mask, kpm = masks(T, T, lens, True)
        h = self.tok_emb(ids)
        if self.pos_emb is not None:
            h = h + self.pos_emb(torch.arange(T))[None]
        for blk in self.blocks:
            h = blk(h, attn_mask, kpm)
        return self.head(self.ln_f(h))


def make_ffn(name, act, bias):
    torch.manual_seed(3)
    D, dff = 6, 10
    ff = GatedFF(D, dff, act, bias)
    jitter(ff, 0.05)
    x = torch.randn(2, 3, D).requires_grad_(True)
    out = ff(x)
    seed = torch.rand_like(out) * 2 - 1
    (out * seed).sum().backward()
    t = {"ff." + k: v for k, v in ff.state_dict().items()}
    t.update({"x": x, "seed": seed, "out": out, "grad.x": x.grad})
    for k, p in ff.named_parameters():
        t["grad.ff." + k] = p.grad
    write_safetensors(os.path.join(OUT_DIR, name), t, dict(d_model=D, d_ff=dff, act=act, no_bias=int(not bias)))


def make_lm(name, c):
    torch.manual_seed(4)
    B, T, lens = 3, 9, [9, 6, 4]
    twin = LM(c)
    jitter(twin, 0.05)
    V = c["vocab"]
    ids = torch.randint(1, V, (B, T))
    targets = torch.full((B, T), -100, dtype=torch.long)
    for b in range(B):
        ids[b, lens[b]:] = 0
        targets[b, :lens[b] - 1] = ids[b, 1:lens[b]]
    logits = twin(ids, lens)
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=-100)
    loss.backward()
    t = dict(twin.state_dict())
    t.update({"ids": ids.double(), "lens": torch.tensor(lens, dtype=torch.float64),
              "targets": targets.double(), "logits": logits, "loss": loss.reshape(1)})
    for k, p in twin.named_parameters():  # a tied Parameter once, under its first name
        t["grad." + k] = p.grad
    write_safetensors(os.path.join(OUT_DIR, name), t, {k: int(v) for k, v in c.items()})


BASE = dict(vocab=11, d_model=16, n_layers=2, n_heads=4, n_kv_heads=4, d_ff=32, max_len=12, pos=0, norm=0,
            ff_act=0, no_bias=0, tie_weights=0)

if __name__ == "__main__":
    os.makedirs(OUT_DIR, exist_ok=True)
    make_ffn("ffn_swiglu.safetensors", SWIGLU, False)
    make_ffn("ffn_geglu.safetensors", GEGLU, True)
    make_lm("model_llama.safetensors", dict(BASE, n_kv_heads=2, d_ff=24, pos=1, norm=1, ff_act=SWIGLU, no_bias=1))
    make_lm("model_gpt2_tied.safetensors", dict(BASE, tie_weights=1))
