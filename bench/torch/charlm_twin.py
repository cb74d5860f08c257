#!/usr/bin/python3
"""PyTorch twin of examples/charlm: the same byte-level GPT, from the same
initial weights, on the same batches, with the same optimizer and schedule.

    /usr/bin/python3 bench/torch/charlm_twin.py --fixture --charlm BIN [--charlm64 BIN]
        writes tests/fixtures/charlm_twin.safetensors: the losses of the first
        30 steps of `charlm train` with its defaults, in float32 (from the
        initial weights BIN writes: a float build) and, with --charlm64 (a
        double build's charlm), in float64 from that build's weights.
    /usr/bin/python3 bench/torch/charlm_twin.py --step --charlm BIN [--threads 2]
        times the training step of the default model; prints a ROW line.

The initial weights come from `charlm train --steps 0` (the model the seed
gives), read by their state_dict names; the batches reimplement
corpus.c's sampler (PCG32 as core/engine/rng.c, Lemire's unbiased draw),
on the default corpus (every regular file of /usr/share/common-licenses in
name order, the last tenth held out).

The models (nn/model.h), --arch's two families: h = tok_emb[ids] (+ pos_emb
for gpt2); per block h += attn(ln1(h)) (packed in_proj, causal softmax,
1/sqrt(d_head)), h += ff(ln2(h)); logits = head(ln_f(h)). gpt2: LayerNorm eps
1e-5, GELU erf, biases, the head tied to tok_emb (no bias). llama: RMSNorm
eps 1e-5, RoPE (LLaMA's interleaved pairs, base 10000), 2 key/value heads for
4 query heads, SwiGLU (d_ff 4 * d_model), no biases, an untied head. Training: mean cross-entropy, clip_grad_norm_(1),
AdamW betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on tensors of 2+ dims,
lr 3e-3 warmed up over 30 steps (lr * (k+1) / 30), then cosine to lr/10 at
step 600 (optim/schedule.h).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_writer  # noqa: E402

CORPUS = "/usr/share/common-licenses"
M64 = (1 << 64) - 1
STEPS = 30
# charlm train's defaults (examples/charlm/cli.c)
D, LAYERS, HEADS, T, B = 128, 4, 4, 64, 32
LR, WARMUP, TOTAL, WD, CLIP, SEED = 3e-3, 30, 600, 0.1, 1.0, 1


# ---- the data (examples/charlm/corpus.c) ------------------------------------------

def default_corpus():
    names = sorted(os.path.join(CORPUS, n) for n in os.listdir(CORPUS))
    data = b"".join(open(p, "rb").read() for p in names if os.path.isfile(p) and not os.path.islink(p))
    return np.frombuffer(data, dtype=np.uint8)


class PCG32:
    """core/engine/rng.c."""

    def __init__(self, seed):
        self.state, self.inc = 0, ((seed << 1) | 1) & M64
        self.u32()
        self.state = (self.state + (0x853C49E6748FEA9B ^ seed)) & M64
        self.u32()

    def u32(self):
        old = self.state
        self.state = (old * 6364136223846793005 + self.inc) & M64
        x = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((x >> rot) | (x << ((-rot) & 31))) & 0xFFFFFFFF

    def below(self, n):
        threshold = ((1 << 32) - n) % n
        while True:
            x = self.u32()
            if x >= threshold:
                return x % n


def batch(corpus, n_train, step):
    """cl_corpus_batch: ids [B, T] and targets [B, T]."""
    r = PCG32((SEED * 0x9E3779B97F4A7C15 + step) & M64)
    starts = [r.below(n_train - T) for _ in range(B)]
    w = np.stack([corpus[s:s + T + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(w[:, :-1]), torch.from_numpy(w[:, 1:])


# ---- the model (nn/model.h) ---------------------------------------------------------

def rope(x):
    """tg_rope on x [B, H, T, dh]: pair (x_2i, x_2i+1) at position p turned by p / 10000^(2i / dh)."""
    dh, Tn = x.shape[-1], x.shape[-2]
    ang = torch.arange(Tn, dtype=torch.float64)[:, None] / 10000.0 ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh)
    c, s = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D))

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


class MHA(nn.Module):
    """tapegrad's fused mode: in_proj [E + 2 Ekv, D] (Q, then K and V of the key/value heads)."""

    def __init__(self, llama):
        super().__init__()
        self.llama, self.kv = llama, HEADS // 2 if llama else HEADS
        E, Ekv = D, D // HEADS * self.kv
        self.in_proj_weight = nn.Parameter(torch.empty(E + 2 * Ekv, D))
        self.in_proj_bias = None if llama else nn.Parameter(torch.empty(E + 2 * Ekv))
        self.out_proj = nn.Linear(D, D, bias=not llama)

    def forward(self, x, masked):
        Bn, Tn, _ = x.shape
        dh = D // HEADS
        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).split([D, dh * self.kv, dh * self.kv], dim=-1)
        q = q.view(Bn, Tn, HEADS, dh).transpose(1, 2)
        k, v = (t.view(Bn, Tn, self.kv, dh).transpose(1, 2) for t in (k, v))
        if self.llama:
            q, k = rope(q), rope(k)
        k, v = (t.repeat_interleave(HEADS // self.kv, dim=1) for t in (k, v))
        a = F.softmax(((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))).masked_fill(masked, float("-inf")), dim=-1)
        return self.out_proj((a @ v).transpose(1, 2).reshape(Bn, Tn, D))


class FF(nn.Module):
    def __init__(self, llama):
        super().__init__()
        self.llama = llama
        if llama:  # SwiGLU, no biases
            self.gate_proj, self.up_proj = nn.Linear(D, 4 * D, bias=False), nn.Linear(D, 4 * D, bias=False)
            self.down_proj = nn.Linear(4 * D, D, bias=False)
        else:
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        if self.llama:
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
        return self.fc2(F.gelu(self.fc1(x)))


def norm(llama):
    return RMSNorm() if llama else nn.LayerNorm(D, eps=1e-5)


class Block(nn.Module):
    def __init__(self, llama):
        super().__init__()
        self.ln1, self.attn = norm(llama), MHA(llama)
        self.ln2, self.ff = norm(llama), FF(llama)

    def forward(self, h, masked):
        h = h + self.attn(self.ln1(h), masked)
        return h + self.ff(self.ln2(h))


class CharLM(nn.Module):
    """gpt2: learned positions, LayerNorm, GELU, head tied to tok_emb (no bias).
    llama: RoPE, RMSNorm, SwiGLU, 2 key/value heads, no biases, untied head."""

    def __init__(self, llama):
        super().__init__()
        self.llama = llama
        self.tok_emb = nn.Embedding(256, D)
        if not llama:
            self.pos_emb = nn.Embedding(T, D)
        self.blocks = nn.ModuleList(Block(llama) for _ in range(LAYERS))
        self.ln_f = norm(llama)
        if llama:
            self.head = nn.Linear(D, 256, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        masked = pos[None, :] > pos[:, None]
        h = self.tok_emb(ids) if self.llama else self.tok_emb(ids) + self.pos_emb(pos)
        for blk in self.blocks:
            h = blk(h, masked)
        h = self.ln_f(h)
        return self.head(h) if self.llama else h @ self.tok_emb.weight.t()


def lr_at(k):
    if k < WARMUP:
        return LR * (k + 1) / WARMUP
    r = (k - WARMUP) / (TOTAL - WARMUP)
    return LR / 10 + (LR - LR / 10) * (1 + math.cos(math.pi * r)) / 2


def initial_model(charlm, dtype, arch):
    """The weights `charlm train --steps 0` writes (its build's precision)."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([charlm, "train", "--arch", arch, "--steps", "0", "--out", d], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sd, _ = st_writer.load_file(os.path.join(d, "model.safetensors"))
    m = CharLM(arch == "llama").to(dtype)
    m.load_state_dict({k: torch.as_tensor(v).to(dtype) for k, v in sd.items()}, strict=True)
    return m


def optimizer(m):
    decay = [p for p in m.parameters() if p.dim() >= 2]
    rest = [p for p in m.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": rest, "weight_decay": 0.0}],
                             lr=LR, betas=(0.9, 0.95), eps=1e-8, foreach=False)


def train_step(m, opt, corpus, n_train, k):
    ids, tgt = batch(corpus, n_train, k)
    opt.zero_grad(set_to_none=False)
    loss = F.cross_entropy(m(ids).reshape(-1, 256), tgt.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), CLIP)
    for g in opt.param_groups:
        g["lr"] = lr_at(k)
    opt.step()
    return loss.item()


def losses(charlm, dtype, arch):
    corpus = default_corpus()
    n_train = len(corpus) - len(corpus) // 10
    m = initial_model(charlm, dtype, arch)
    opt = optimizer(m)
    return [train_step(m, opt, corpus, n_train, k) for k in range(STEPS)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", action="store_true")
    ap.add_argument("--step", action="store_true")
    ap.add_argument("--charlm", required=True)
    ap.add_argument("--charlm64")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--arch", choices=("gpt2", "llama"), default="gpt2")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    corpus = default_corpus()
    h = 0xCBF29CE484222325
    for byte in corpus.tobytes():
        h = ((h ^ byte) * 0x100000001B3) & M64
    if a.fixture:
        out = {}
        for arch in ("gpt2", "llama"):
            out[f"{arch}_loss_f32"] = torch.tensor(losses(a.charlm, torch.float32, arch), dtype=torch.float64)
            if a.charlm64:
                out[f"{arch}_loss_f64"] = torch.tensor(losses(a.charlm64, torch.float64, arch), dtype=torch.float64)
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures",
                            "charlm_twin.safetensors")
        st_writer.save_file(out, path, {"corpus_hash": f"{h:016x}", "corpus_bytes": str(len(corpus)),
                                   "steps": str(STEPS), "torch": torch.__version__})
        print("wrote", os.path.normpath(path), {k: v[:3].tolist() + ["..."] + v[-2:].tolist() for k, v in out.items()})
    if a.step:
        n_train = len(corpus) - len(corpus) // 10
        m = initial_model(a.charlm, torch.float32, a.arch)
        opt = optimizer(m)
        times = []
        for k in range(a.reps + 3):
            t0 = time.perf_counter()
            train_step(m, opt, corpus, n_train, k)
            times.append(1000 * (time.perf_counter() - t0))
        times = sorted(times[3:])
        print(f"ROW bench=charlm impl=torch tag={a.arch} B={B} T={T} d_model={D} layers={LAYERS} "
              f"threads={a.threads} ms={times[len(times) // 2]:.2f} min_ms={times[0]:.2f}")


if __name__ == "__main__":
    main()
