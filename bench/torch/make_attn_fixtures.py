#!/usr/bin/python3
"""PyTorch reference fixtures for the attention variants (tests/test_gqa.c, test_rope.c,
test_alibi.c, test_mha_options.c).

Run from the repository root with Debian's python3-torch:
    /usr/bin/python3 bench/torch/make_attn_fixtures.py
Writes float64 safetensors files into tests/fixtures/ in the format of
make_nn_fixtures.py's MHA files ("attn.<name>" parameters, "xq", "lens",
"seed", "out", "weights" [B,H,Lq,Lk], "grad.<name>"; metadata n_heads,
n_kv_heads, d_model, d_head, causal):

  gqa_per_head.safetensors   grouped-query attention, 4 query heads sharing 2
                             key/value heads: "heads.<h>.q_proj.*",
                             "kv_heads.<g>.{k,v}_proj.*"
  gqa_fused.safetensors      the same module's weights stacked as
                             in_proj_weight [(H + 2 Hkv) dh, D] (Q rows, then
                             K rows, then V rows), the same numbers
  mqa_fused.safetensors      multi-query (one key/value head), fused layout
  rope_gqa_per_head.safetensors, rope_gqa_fused.safetensors
                             grouped-query attention with RoPE on q and k
                             (every dim rotated, base 10000)
  rope_partial_fused.safetensors
                             multi-head attention, RoPE on half of each
                             head's dims (rope_frac 0.5), base 500

  alibi_gqa_per_head.safetensors, alibi_gqa_fused.safetensors
                             grouped-query attention with ALiBi (4 heads) and an
                             additive bias "bias" [B, H, L, L] taking a gradient
                             ("grad.bias"); metadata alibi
  alibi_fused.safetensors    multi-head, 3 heads (ALiBi's slopes for a head
                             count that is not a power of 2), bias [1, H, L, L]

  mha_kdim_vdim.safetensors  torch.nn.MultiheadAttention(8, 2, kdim=5, vdim=3):
                             q/k/v_proj_weight, keys "xkv" [B,Lk,5] and values
                             "xv" [B,Lk,3] from different inputs, key padding
  mha_bias_kv_zero_attn.safetensors
                             nn.MultiheadAttention(6, 3, add_bias_kv=True,
                             add_zero_attn=True): bias_k, bias_v; self-attention,
                             causal + key padding; weights [B,H,L,L+2]
  mha_unbatched.safetensors  nn.MultiheadAttention(4, 2, add_bias_kv=True) on an
                             unbatched xq [L, 4] (causal): out [L, 4], weights [H,L,L+1]
These hold nn.MultiheadAttention's own state_dict names (metadata kdim, vdim,
add_bias_kv, add_zero_attn).

ALiBi adds m_h * (j - i) to the score of query i and key j, m_h the slopes of
the paper's code (get_slopes: 2^(-8(h+1)/n), interpolated for n not a power
of 2).

RoPE is the formula of LLaMA's apply_rotary_emb (precompute_freqs_cis, then
view_as_complex on pairs (x_2i, x_2i+1) times exp(i p / base^(2i/rot))), in
complex128, on the first rot dims of every q and k head, the rest unchanged;
metadata rope, rope_base, rope_frac.

The reference is scaled_dot_product_attention on keys and values expanded to
every query head with repeat_interleave (PyTorch's enable_gqa semantics).
Debian's torch 1.13 has no F.scaled_dot_product_attention, so its math
backend is written out: softmax(q k^T / sqrt(dh) + mask) v.
"""
import math
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
from make_nn_fixtures import OUT_DIR, jitter, masks, write_safetensors  # noqa: E402

torch.set_default_dtype(torch.float64)


def alibi_slopes(n):
    """The ALiBi paper's get_slopes."""
    def pow2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return pow2(n)
    p2 = 2 ** math.floor(math.log2(n))
    return pow2(p2) + alibi_slopes(2 * p2)[0::2][: n - p2]


def sdpa(q, k, v, attn_mask, kpm, add=None):
    """q [B,H,Lq,dh], k/v [B,H,Lk,dh] -> out [B,H,Lq,dh], weights [B,H,Lq,Lk]; add: [., H, Lq, Lk] or None."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if add is not None:
        s = s + add
    masked = kpm[:, None, None, :].expand_as(s)
    if attn_mask is not None:
        masked = masked | attn_mask[None, None]
    a = torch.softmax(s.masked_fill(masked, float("-inf")), dim=-1)
    return a @ v, a


def precompute_freqs_cis(dim, end, theta):
    """LLaMA's, in float64: [end, dim // 2] complex exp(i t / theta^(2j / dim))."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].double() / dim))
    t = torch.arange(end).double()
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis, rot):
    """LLaMA's on [B, H, L, dh] (its layout is [B, L, H, dh]: the same per head),
    on the first rot dims of each head."""
    def one(x):
        xr = torch.view_as_complex(x[..., :rot].reshape(*x.shape[:-1], -1, 2).contiguous())
        out = torch.view_as_real(xr * freqs_cis[None, None]).flatten(3)
        return torch.cat([out, x[..., rot:]], -1)
    return one(xq), one(xk)


class GroupedMHA(nn.Module):
    """H query heads, Hkv key/value heads; query head h reads key/value head h // (H // Hkv)."""

    def __init__(self, D, H, Hkv, dh, rot=0, base=10000.0, alibi=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(H):
            head = nn.Module()
            head.q_proj = nn.Linear(D, dh)
            self.heads.append(head)
        self.kv_heads = nn.ModuleList()
        for _ in range(Hkv):
            head = nn.Module()
            head.k_proj, head.v_proj = nn.Linear(D, dh), nn.Linear(D, dh)
            self.kv_heads.append(head)
        self.out_proj = nn.Linear(H * dh, D)
        self.H, self.Hkv, self.dh, self.rot, self.base, self.alibi = H, Hkv, dh, rot, base, alibi

    def forward(self, xq, xkv, attn_mask, kpm, bias=None):
        q = torch.stack([h.q_proj(xq) for h in self.heads], 1)          # [B, H, Lq, dh]
        k = torch.stack([h.k_proj(xkv) for h in self.kv_heads], 1)      # [B, Hkv, Lk, dh]
        v = torch.stack([h.v_proj(xkv) for h in self.kv_heads], 1)
        if self.rot:
            q, k = apply_rotary_emb(q, k, precompute_freqs_cis(self.rot, q.shape[2], self.base), self.rot)
        group = self.H // self.Hkv
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        add = bias
        if self.alibi:
            Lq, Lk = q.shape[2], k.shape[2]
            rel = (torch.arange(Lk)[None, :] - torch.arange(Lq)[:, None]).double()  # j - i
            ab = torch.tensor(alibi_slopes(self.H))[:, None, None] * rel[None]     # [H, Lq, Lk]
            add = ab[None] if add is None else add + ab[None]
        o, w = sdpa(q, k, v, attn_mask, kpm, add)
        B, H, Lq, dh = o.shape
        return self.out_proj(o.transpose(1, 2).reshape(B, Lq, H * dh)), w


def fused_names(t, m):
    """The per-head parameters (and grads) of GroupedMHA m in t, stacked as in_proj."""
    for pre in ("attn.", "grad.attn."):
        for what in ("weight", "bias"):
            rows = [t.pop(f"{pre}heads.{h}.q_proj.{what}") for h in range(m.H)]
            rows += [t[f"{pre}kv_heads.{g}.k_proj.{what}"] for g in range(m.Hkv)]
            rows += [t[f"{pre}kv_heads.{g}.v_proj.{what}"] for g in range(m.Hkv)]
            for g in range(m.Hkv):
                del t[f"{pre}kv_heads.{g}.k_proj.{what}"], t[f"{pre}kv_heads.{g}.v_proj.{what}"]
            t[f"{pre}in_proj_{what}"] = torch.cat(rows, 0)
    return t


def fixture(module, xq, lens, causal, bias=None):
    """Self-attention of module on xq (plus bias, taking a gradient): every tensor of the file, by name."""
    attn_mask, kpm = masks(xq.shape[1], xq.shape[1], lens, causal)
    xq = xq.clone().requires_grad_(True)
    if bias is not None:
        bias = bias.clone().requires_grad_(True)
    out, w = module(xq, xq, attn_mask, kpm, bias)
    assert torch.isfinite(out).all()
    seed = torch.rand_like(out) * 2 - 1
    (out * seed).sum().backward()
    t = {"attn." + k: v for k, v in module.state_dict().items()}
    t.update({"xq": xq, "lens": torch.tensor(lens, dtype=torch.float64), "seed": seed, "out": out, "weights": w,
              "grad.xq": xq.grad})
    for k, p in module.named_parameters():
        t["grad.attn." + k] = p.grad
    if bias is not None:
        t.update({"bias": bias, "grad.bias": bias.grad})
    return t


def make_gqa():
    torch.manual_seed(3)
    D, H, Hkv, dh = 8, 4, 2, 3
    m = GroupedMHA(D, H, Hkv, dh)
    jitter(m)
    meta = dict(n_heads=H, n_kv_heads=Hkv, d_model=D, d_head=dh, causal=1)
    t = fixture(m, torch.randn(3, 5, D), [5, 3, 2], True)
    write_safetensors(os.path.join(OUT_DIR, "gqa_per_head.safetensors"), t, meta)
    write_safetensors(os.path.join(OUT_DIR, "gqa_fused.safetensors"), fused_names(dict(t), m), meta)
    D, H, Hkv, dh = 6, 3, 1, 2
    m = GroupedMHA(D, H, Hkv, dh)
    jitter(m)
    t = fixture(m, torch.randn(2, 4, D), [4, 3], True)
    write_safetensors(os.path.join(OUT_DIR, "mqa_fused.safetensors"), fused_names(t, m),
                      dict(n_heads=H, n_kv_heads=Hkv, d_model=D, d_head=dh, causal=1))


def make_rope():
    torch.manual_seed(4)
    D, H, Hkv, dh = 8, 4, 2, 4
    m = GroupedMHA(D, H, Hkv, dh, rot=dh)
    jitter(m)
    meta = dict(n_heads=H, n_kv_heads=Hkv, d_model=D, d_head=dh, causal=1, rope=1, rope_base=10000, rope_frac=1)
    t = fixture(m, torch.randn(2, 6, D), [6, 4], True)
    write_safetensors(os.path.join(OUT_DIR, "rope_gqa_per_head.safetensors"), t, meta)
    write_safetensors(os.path.join(OUT_DIR, "rope_gqa_fused.safetensors"), fused_names(dict(t), m), meta)
    D, H, dh = 8, 2, 8
    m = GroupedMHA(D, H, H, dh, rot=4, base=500.0)
    jitter(m)
    t = fixture(m, torch.randn(2, 7, D), [7, 5], True)
    write_safetensors(os.path.join(OUT_DIR, "rope_partial_fused.safetensors"), fused_names(t, m),
                      dict(n_heads=H, n_kv_heads=H, d_model=D, d_head=dh, causal=1, rope=1, rope_base=500,
                           rope_frac=0.5))


def make_alibi():
    torch.manual_seed(5)
    D, H, Hkv, dh, B, L = 8, 4, 2, 3, 2, 6
    m = GroupedMHA(D, H, Hkv, dh, alibi=True)
    jitter(m)
    meta = dict(n_heads=H, n_kv_heads=Hkv, d_model=D, d_head=dh, causal=1, alibi=1)
    t = fixture(m, torch.randn(B, L, D), [6, 4], True, bias=0.5 * torch.randn(B, H, L, L))
    write_safetensors(os.path.join(OUT_DIR, "alibi_gqa_per_head.safetensors"), t, meta)
    write_safetensors(os.path.join(OUT_DIR, "alibi_gqa_fused.safetensors"), fused_names(dict(t), m), meta)
    D, H, dh, L = 6, 3, 2, 5
    m = GroupedMHA(D, H, H, dh, alibi=True)
    jitter(m)
    t = fixture(m, torch.randn(2, L, D), [5, 3], True, bias=0.5 * torch.randn(1, H, L, L))
    write_safetensors(os.path.join(OUT_DIR, "alibi_fused.safetensors"), fused_names(t, m),
                      dict(n_heads=H, n_kv_heads=H, d_model=D, d_head=dh, causal=1, alibi=1))


def torch_mha_fixture(name, mha, xq, xk, xv, lens, causal, meta):
    """nn.MultiheadAttention itself on (xq, xk, xv); lens None: no key padding."""
    unbatched = xq.dim() == 2
    Lq, Lk = xq.shape[-2], xk.shape[-2]
    attn_mask = torch.triu(torch.ones(Lq, Lk, dtype=torch.bool), 1) if causal else None
    kpm = None if lens is None else torch.arange(Lk)[None, :] >= torch.tensor(lens)[:, None]
    ins = [x.clone().requires_grad_(True) for x in (xq, xk, xv)]
    out, w = mha(*ins, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
    assert torch.isfinite(out).all()
    seed = torch.rand_like(out) * 2 - 1
    (out * seed).sum().backward()
    t = {"attn." + k: v for k, v in mha.state_dict().items()}
    t.update({"xq": ins[0], "xkv": ins[1], "xv": ins[2], "seed": seed, "out": out, "weights": w,
              "grad.xq": ins[0].grad, "grad.xkv": ins[1].grad, "grad.xv": ins[2].grad})
    if lens is not None:
        t["lens"] = torch.tensor(lens, dtype=torch.float64)
    for k, p in mha.named_parameters():
        t["grad.attn." + k] = p.grad
    meta = dict(meta, causal=int(causal), unbatched=int(unbatched))
    write_safetensors(os.path.join(OUT_DIR, name), t, meta)


def make_torch_mha():
    torch.manual_seed(6)
    mha = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, batch_first=True)
    jitter(mha)
    torch_mha_fixture("mha_kdim_vdim.safetensors", mha, torch.randn(2, 4, 8), torch.randn(2, 6, 5),
                      torch.randn(2, 6, 3), [6, 3], False, dict(n_heads=2, d_model=8, d_head=4, kdim=5, vdim=3))
    mha = nn.MultiheadAttention(6, 3, add_bias_kv=True, add_zero_attn=True, batch_first=True)
    jitter(mha)
    x = torch.randn(2, 5, 6)
    torch_mha_fixture("mha_bias_kv_zero_attn.safetensors", mha, x, x, x, [5, 2], True,
                      dict(n_heads=3, d_model=6, d_head=2, add_bias_kv=1, add_zero_attn=1))
    mha = nn.MultiheadAttention(4, 2, add_bias_kv=True, batch_first=True)
    jitter(mha)
    x = torch.randn(5, 4)
    torch_mha_fixture("mha_unbatched.safetensors", mha, x, x, x, None, True,
                      dict(n_heads=2, d_model=4, d_head=2, add_bias_kv=1))


if __name__ == "__main__":
    os.makedirs(OUT_DIR, exist_ok=True)
    make_gqa()
    make_rope()
    make_alibi()
    make_torch_mha()
