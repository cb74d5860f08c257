#!/usr/bin/python3
"""The first step's loss under bfloat16 autocast against float32, on the
PyTorch twin of the toy model (bench/torch/bench_model.py), next to the
first-order bound derived in docs/PERF.md "Mixed precision (bfloat16
autocast)".

    /usr/bin/python3 bench/torch/bf16_bound.py [bench_model.py's flags] [--seeds 1,2,3]

For each seed: the twin's initial weights and first training batch (those of
bench_model.py --train --seed S, whose LOSS step=1 line is the float32 loss
printed here), then

  L32        the float32 loss
  dL_tg      loss with tapegrad's autocast emulated (every product's operands
             rounded to bfloat16, the products and everything else float32)
             minus L32
  dL_torch   loss under torch.autocast("cpu", bfloat16) minus L32
  dz_tg, dz_torch   max |logit difference| of the same two forwards
  B1_tg      2^-8 sum over the operands X of every product of sum |X * dL/dX|
             (float32 values and grads): the first-order bound on |dL_tg|
  B1_torch   the same plus the bfloat16 outputs PyTorch's autocast rounds
             (each product's output, softmax's, GELU's); a value PyTorch
             rounds once and then multiplies (q k v, softmax's output, A V's
             output, GELU's) counts twice, so it is looser than it needs be
  Bsum       K 2^-23 sum over every product C = A B of sum |dL/dC| (|A| |B|):
             the first-order bound of the two runs' float32 sums (2 gamma_K
             each element), to add to B1_tg
  head       (2^-7 + 2^-16) max over rows and classes of sum_k |x_k| |W_vk|
             for the head's own product (x = ln_f's output): the rigorous
             bound on the logit change its operands' rounding alone causes
  S_tg       2^-8 / sqrt(3) * sqrt(sum over the same operands of (X dL/dX)^2):
             the size |dL_tg| would have if the roundings were independent
             and uniform in relative size (an estimate, not a bound)

One line per seed: "BOUND seed=S key=value ...". With --export DIR, also
DIR/init_S.safetensors (the twin's initial weights, under the names seqtask
uses) and DIR/batch_S.txt (the first --export-batches batches of
bench_model.py --train's stream, in order, one "source<TAB>target" line per
example), so that

    seqtask train --init DIR/init_S.safetensors --data DIR/batch_S.txt --no-shuffle --steps 1 ...

takes its first step from the same weights on the same batch, and its
float32 and bfloat16 losses can be held against L32 and B1_tg here; with
--steps N and N batches exported, every step sees the batch the twin's
--train --seed S sees at that step.
"""
import json
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_model as bm  # noqa: E402

U = 2.0 ** -8  # bfloat16's unit roundoff (8 significant bits)


def bf(x):
    return x.to(torch.bfloat16).float()


def forward(model, ids, lens, mode, keep, prods=None):
    """The twin's forward (ToyModel.forward) with its products written out.
    mode "f32": float32; "tg": each product's operands rounded to bfloat16
    (tapegrad's autocast). keep: a list that receives (tensor, kind) of
    every product operand ("op") and every tensor PyTorch's autocast returns in
    bfloat16 ("out"), each retaining its grad; prods: a list that receives
    (C, A, B) of every product C = A B (C retaining its grad)."""
    rnd = bf if mode == "tg" else (lambda x: x)

    def mark(x, kind):
        if keep is not None and x.requires_grad:
            x.retain_grad()
            keep.append((x, kind))
        return x

    def prod(c, a, b):
        if prods is not None:
            c.retain_grad()
            prods.append((c, a.detach(), b.detach()))
        return c

    def linear(x, lin_w, lin_b):
        mark(x, "op"), mark(lin_w, "op")
        return mark(prod(F.linear(rnd(x), rnd(lin_w)) + lin_b, x, lin_w.t()), "out")

    B, T = ids.shape
    pos = torch.arange(T)
    h = model.tok_emb(ids) + model.pos_emb(pos)
    masked = (pos[None, :] > pos[:, None])[None, None] | (pos[None, :] >= lens[:, None])[:, None, None, :]
    for blk in model.blocks:
        at = blk.attn
        E = at.h * at.dh
        x = blk.ln1(h)
        qkv = linear(x, at.in_proj_weight, at.in_proj_bias)
        q, k, v = (t.reshape(B, T, at.h, at.dh).transpose(1, 2) for t in qkv.split(E, dim=-1))
        q, k, v = mark(q, "op"), mark(k, "op"), mark(v, "op")
        s = mark(prod(rnd(q) @ rnd(k).transpose(-2, -1), q, k.transpose(-2, -1)), "out") * (1.0 / math.sqrt(at.dh))
        a = mark(F.softmax(s.masked_fill(masked, float("-inf")), dim=-1), "out")
        mark(a, "op")
        o = mark(prod(rnd(a) @ rnd(v), a, v), "out").transpose(1, 2).reshape(B, T, E)
        h = h + linear(o, at.out_proj.weight, at.out_proj.bias)
        f = blk.ff
        u = mark(F.gelu(linear(blk.ln2(h), f.fc1.weight, f.fc1.bias)), "out")
        h = h + linear(u, f.fc2.weight, f.fc2.bias)
    xf = model.ln_f(h)
    return linear(xf, model.head.weight, model.head.bias), xf


def save_safetensors(path, tensors):
    """tensors: name -> float32 tensor; safetensors' layout (8-byte header
    length, JSON header, little-endian data)."""
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        b = t.detach().contiguous().float().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def one_seed(c, seed):
    c.seed = seed
    torch.manual_seed(seed)
    model = bm.ToyModel(c)
    task = bm.Task(c, 1)
    src, n, tgt = task.draw(c.batch, False)
    ids, tg, lens = bm.make_batch(src, n, tgt)
    if c.export:
        save_safetensors(os.path.join(c.export, f"init_{seed}.safetensors"), model.state_dict())
        with open(os.path.join(c.export, f"batch_{seed}.txt"), "w") as f:
            for i in range(c.export_batches):
                for r in range(len(n)):
                    k = int(n[r])
                    f.write(" ".join(map(str, src[r, :k])) + "\t" + " ".join(map(str, tgt[r, :k])) + "\n")
                if i + 1 < c.export_batches:
                    src, n, tgt = task.draw(c.batch, False)
    V = c.symbols + 4

    def loss_of(z):
        return F.cross_entropy(z.float().reshape(-1, V), tg.reshape(-1), ignore_index=-100)

    keep, prods = [], []
    z32, xf = forward(model, ids, lens, "f32", keep, prods)
    L32 = loss_of(z32)
    L32.backward()
    with torch.no_grad():
        ztg, _ = forward(model, ids, lens, "tg", None)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            zt = model(ids, lens)
            Lt = F.cross_entropy(zt.reshape(-1, V), tg.reshape(-1), ignore_index=-100)
    seen, ops, outs = set(), [], []
    for x, kind in keep:  # a tensor marked twice (a as softmax's output and a product's operand) counts per kind
        key = (id(x), kind)
        if key in seen:
            continue
        seen.add(key)
        (ops if kind == "op" else outs).append((x * x.grad).detach().abs())
    b1_tg = U * sum(float(t.sum()) for t in ops)
    b1_out = U * sum(float(t.sum()) for t in outs)
    b_sum = sum(a.shape[-1] * 2.0 ** -23 * float((cc.grad.abs() * (a.abs() @ b.abs())).sum()) for cc, a, b in prods)
    s_tg = U / math.sqrt(3) * math.sqrt(sum(float((t * t).sum()) for t in ops))
    W = model.head.weight.detach()
    head = (2.0 ** -7 + 2.0 ** -16) * float((xf.detach().abs() @ W.abs().t()).max())
    Ltg = loss_of(ztg)
    print(f"BOUND seed={seed} L32={float(L32):.9g} dL_tg={float(Ltg - L32):.3e} dL_torch={float(Lt - L32):.3e} "
          f"dz_tg={float((ztg - z32).abs().max()):.3e} dz_torch={float((zt.float() - z32).abs().max()):.3e} "
          f"B1_tg={b1_tg:.3e} B1_torch={b1_tg + b1_out:.3e} Bsum={b_sum:.3e} head={head:.3e} S_tg={s_tg:.3e}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="reverse", choices=["copy", "reverse", "sort"])
    for name, typ, default in [("symbols", int, 16), ("min-len", int, 4), ("max-len", int, 12),
                               ("layers", int, 2), ("d-model", int, 64), ("heads", int, 4),
                               ("d-head", int, 0), ("d-ff", int, 0), ("batch", int, 64), ("threads", int, 1)]:
        ap.add_argument("--" + name, type=typ, default=default)
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--export", default="")
    ap.add_argument("--export-batches", type=int, default=1)
    c = ap.parse_args()
    c.dropout = 0.0
    c.d_head = c.d_head or c.d_model // c.heads
    c.d_ff = c.d_ff or 4 * c.d_model
    torch.set_num_threads(c.threads)
    for s in c.seeds.split(","):
        one_seed(c, int(s))


if __name__ == "__main__":
    sys.exit(main())
