#!/usr/bin/python3
"""PyTorch reference fixtures for tests/test_model.c (the nn layer).

Run from the repository root with Debian's python3-torch:
    /usr/bin/python3 bench/torch/make_nn_fixtures.py
Writes, into tests/fixtures/, float64 safetensors files (every tensor F64,
computed in float64; integer arrays such as ids and lengths are stored as
exact F64 values):

  mha_fused_self.safetensors   torch.nn.MultiheadAttention(batch_first=True),
                               self-attention, causal + key-padding masks
  mha_fused_cross.safetensors  the same module, cross-attention (Lq != Lk),
                               top-left causal + key padding on the keys
  mha_per_head.safetensors     an explicit per-head module (d_head != D / H),
                               self-attention, causal + key padding
  model_fused.safetensors      the toy model of nn/model.h (its twin
                               below uses nn.MultiheadAttention): logits, the
                               cross-entropy loss (ignore_index -100) and the
                               gradient of every parameter

MHA files hold the layer's parameters under "attn.<state_dict name>", the
inputs "xq" [B,Lq,D] (and "xkv" [B,Lk,D]), "lens" [B] (valid keys per batch
element), "seed" [B,Lq,D] (the loss is sum(seed * out)), "out", "weights"
[B,H,Lq,Lk] (per head, not averaged), and "grad.<name>" for the inputs and
every parameter. "__metadata__" gives n_heads, d_model, d_head, causal.

PyTorch's boolean masks mean "masked" where True: the causal mask is
triu(ones(Lq, Lk), 1) and key_padding_mask[b, j] = j >= lens[b]; tapegrad's
equivalents are tg_mask.causal and key_lens (an int tensor [B] of the lengths). Every row keeps at
least one key (PyTorch gives NaN for a fully masked row, tapegrad zeros).

The model file holds the twin's state_dict under its own names, "ids",
"lens", "targets" [B,T] (shifted ids, -100 where ignored), "logits"
[B,T,V], "loss" [1], "attn.<l>" [B,H,T,T] and "grad.<name>"; "__metadata__"
gives the config. Parameters are PyTorch's default inits plus small noise, so
that biases and LayerNorm affine parameters are not trivially 0 / 1.

The safetensors writer is inlined (the pip package is not needed).
"""
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT_DIR = os.path.join("tests", "fixtures")
torch.set_default_dtype(torch.float64)


def write_safetensors(path, tensors, metadata):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().to(torch.float64).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F64", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
    print("wrote", path, len(tensors), "tensors")


def jitter(module, amp=0.1):
    with torch.no_grad():
        for p in module.parameters():
            p.add_(amp * (2 * torch.rand_like(p) - 1))


def masks(Lq, Lk, lens, causal):
    B = len(lens)
    attn_mask = torch.triu(torch.ones(Lq, Lk, dtype=torch.bool), 1) if causal else None
    kpm = torch.arange(Lk)[None, :] >= torch.tensor(lens)[:, None]
    assert kpm.shape == (B, Lk)
    return attn_mask, kpm


# ---- MHA ----------------------------------------------------------------------------


class PerHeadMHA(nn.Module):
    """Per-head attention: head h owns q/k/v projections [d_head, D]."""

    def __init__(self, D, H, dh):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(H):
            head = nn.Module()
            head.q_proj, head.k_proj, head.v_proj = nn.Linear(D, dh), nn.Linear(D, dh), nn.Linear(D, dh)
            self.heads.append(head)
        self.out_proj = nn.Linear(H * dh, D)
        self.dh = dh

    def forward(self, xq, xkv, attn_mask, kpm):
        outs, weights = [], []
        for head in self.heads:
            q, k, v = head.q_proj(xq), head.k_proj(xkv), head.v_proj(xkv)
            s = q @ k.transpose(-1, -2) / math.sqrt(self.dh)  # [B, Lq, Lk]
            masked = kpm[:, None, :].expand_as(s)
            if attn_mask is not None:
                masked = masked | attn_mask[None]
            a = torch.softmax(s.masked_fill(masked, float("-inf")), dim=-1)
            outs.append(a @ v)
            weights.append(a)
        return self.out_proj(torch.cat(outs, -1)), torch.stack(weights, 1)


def mha_fixture(name, module, xq, xkv, lens, causal, meta):
    attn_mask, kpm = masks(xq.shape[1], (xq if xkv is None else xkv).shape[1], lens, causal)
    xq = xq.clone().requires_grad_(True)
    xkv_in = xq if xkv is None else xkv.clone().requires_grad_(True)
    if isinstance(module, nn.MultiheadAttention):
        out, w = module(xq, xkv_in, xkv_in, key_padding_mask=kpm, attn_mask=attn_mask,
                        need_weights=True, average_attn_weights=False)
    else:
        out, w = module(xq, xkv_in, attn_mask, kpm)
    assert torch.isfinite(out).all()
    seed = torch.rand_like(out) * 2 - 1
    (out * seed).sum().backward()
    t = {"attn." + k: v for k, v in module.state_dict().items()}
    t["xq"] = xq
    if xkv is not None:
        t["xkv"] = xkv_in
    t.update({"lens": torch.tensor(lens, dtype=torch.float64), "seed": seed, "out": out, "weights": w})
    t["grad.xq"] = xq.grad
    if xkv is not None:
        t["grad.xkv"] = xkv_in.grad
    for k, p in module.named_parameters():
        t["grad.attn." + k] = p.grad
    write_safetensors(os.path.join(OUT_DIR, name), t, dict(meta, causal=int(causal)))


def make_mha():
    torch.manual_seed(1)
    D, H = 8, 2
    mha = nn.MultiheadAttention(D, H, batch_first=True)
    jitter(mha)
    meta = dict(n_heads=H, d_model=D, d_head=D // H)
    mha_fixture("mha_fused_self.safetensors", mha, torch.randn(3, 5, D), None, [5, 3, 1], True, meta)
    mha.zero_grad()
    mha_fixture("mha_fused_cross.safetensors", mha, torch.randn(3, 4, D), torch.randn(3, 6, D), [6, 2, 4],
                True, meta)
    D, H, dh = 6, 2, 4
    ph = PerHeadMHA(D, H, dh)
    jitter(ph)
    mha_fixture("mha_per_head.safetensors", ph, torch.randn(2, 5, D), None, [5, 3], True,
                dict(n_heads=H, d_model=D, d_head=dh))


# ---- the toy model (nn/model.h) -----------------------------------------------------


class FF(nn.Module):
    def __init__(self, D, dff):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, dff), nn.Linear(dff, D)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))  # erf GELU


class Block(nn.Module):
    def __init__(self, D, H, dff):
        super().__init__()
        self.ln1 = nn.LayerNorm(D, eps=1e-5)
        self.attn = nn.MultiheadAttention(D, H, batch_first=True)
        self.ln2 = nn.LayerNorm(D, eps=1e-5)
        self.ff = FF(D, dff)

    def forward(self, x, attn_mask, kpm):
        h = self.ln1(x)
        a, w = self.attn(h, h, h, attn_mask=attn_mask, key_padding_mask=kpm, need_weights=True,
                         average_attn_weights=False)
        x = x + a
        return x + self.ff(self.ln2(x)), w


class Twin(nn.Module):
    def __init__(self, V, D, L, H, dff, tmax):
        super().__init__()
        self.tok_emb, self.pos_emb = nn.Embedding(V, D), nn.Embedding(tmax, D)
        self.blocks = nn.ModuleList([Block(D, H, dff) for _ in range(L)])
        self.ln_f = nn.LayerNorm(D, eps=1e-5)
        self.head = nn.Linear(D, V)

    def forward(self, ids, lens):
        B, T = ids.shape
        attn_mask, kpm = masks(T, T, lens, True)
        h = self.tok_emb(ids) + self.pos_emb(torch.arange(T))[None]
        weights = []
        for blk in self.blocks:
            h, w = blk(h, attn_mask, kpm)
            weights.append(w)
        return self.head(self.ln_f(h)), weights


def make_model():
    torch.manual_seed(2)
    V, D, L, H, dff, tmax = 11, 16, 2, 4, 32, 12
    B, T, lens = 3, 9, [9, 6, 4]
    twin = Twin(V, D, L, H, dff, tmax)
    jitter(twin, 0.05)
    ids = torch.randint(1, V, (B, T))
    targets = torch.full((B, T), -100, dtype=torch.long)
    for b in range(B):
        ids[b, lens[b]:] = 0  # PAD
        targets[b, 1:lens[b] - 1] = ids[b, 2:lens[b]]  # position 0 ignored, as the BOS/source part
    logits, weights = twin(ids, lens)
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=-100)
    loss.backward()
    t = dict(twin.state_dict())
    t.update({"ids": ids.double(), "lens": torch.tensor(lens, dtype=torch.float64),
              "targets": targets.double(), "logits": logits, "loss": loss.reshape(1)})
    for l, w in enumerate(weights):
        t["attn.%d" % l] = w
    for k, p in twin.named_parameters():
        t["grad." + k] = p.grad
    meta = dict(vocab=V, d_model=D, n_layers=L, n_heads=H, d_ff=dff, max_len=tmax)
    write_safetensors(os.path.join(OUT_DIR, "model_fused.safetensors"), t, meta)


if __name__ == "__main__":
    os.makedirs(OUT_DIR, exist_ok=True)
    make_mha()
    make_model()
