#!/usr/bin/python3
"""The `seqtask train --init` fixture: a toy model trained by PyTorch.

Run from the repository root with Debian's python3-torch:
    /usr/bin/python3 bench/torch/make_init_fixture.py
Writes tests/fixtures/init_model.safetensors: the state_dict of the PyTorch
twin of nn/model.h (fused attention: torch.nn.MultiheadAttention's
in_proj_weight / in_proj_bias / out_proj), float32, trained here on the copy
task with seqtask's token layout, for

    seqtask train --task copy --symbols 6 --min-len 1 --max-len 4 \\
                  --layers 2 --d-model 32 --heads 2 --d-ff 64 --init FILE

tests/test_train.c loads it with --init and checks that tapegrad decodes the
copy task as well as PyTorch did: the weights only work if every name, shape
and layout (the packed Q/K/V rows, the [out, in] Linear weights, the position
table of Tmax = 2 * max_len + 3 rows) means the same thing in both.

Tokens: PAD=0 BOS=1 SEP=2 EOS=3, symbol s is token 4 + s. A sequence is
BOS x SEP y EOS, right-padded; the model reads it without its last token and
the loss covers the positions predicting y1..ym and EOS (ignore_index -100).
"""
import os
import random
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_writer  # noqa: E402

SYMBOLS, MIN_LEN, MAX_LEN = 6, 1, 4
LAYERS, D, H, DFF = 2, 32, 2, 64
V, TMAX = SYMBOLS + 4, 2 * MAX_LEN + 3
PAD, BOS, SEP, EOS = 0, 1, 2, 3
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures",
                   "init_model.safetensors")


class FF(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, DFF), nn.Linear(DFF, D)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))  # erf GELU


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D, eps=1e-5)
        self.attn = nn.MultiheadAttention(D, H, batch_first=True)
        self.ln2 = nn.LayerNorm(D, eps=1e-5)
        self.ff = FF()

    def forward(self, x, causal, kpm):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=causal, key_padding_mask=kpm, need_weights=False)[0]
        return x + self.ff(self.ln2(x))


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_emb, self.pos_emb = nn.Embedding(V, D), nn.Embedding(TMAX, D)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D, eps=1e-5)
        self.head = nn.Linear(D, V)

    def forward(self, ids, lens):
        B, T = ids.shape
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)  # True = masked
        kpm = torch.arange(T)[None, :] >= lens[:, None]
        h = self.tok_emb(ids) + self.pos_emb(torch.arange(T))[None]
        for blk in self.blocks:
            h = blk(h, causal, kpm)
        return self.head(self.ln_f(h))


def batch(rng, B):
    """ids [B, T], lens [B], targets [B, T] exactly as seqtask builds them."""
    seqs = []
    for _ in range(B):
        x = [rng.randrange(SYMBOLS) for _ in range(rng.randint(MIN_LEN, MAX_LEN))]
        seqs.append((len(x), [BOS] + [4 + s for s in x] + [SEP] + [4 + s for s in x] + [EOS]))
    T = max(len(s) for _, s in seqs) - 1
    ids = torch.full((B, T), PAD, dtype=torch.long)
    tg = torch.full((B, T), -100, dtype=torch.long)
    lens = torch.tensor([len(s) - 1 for _, s in seqs])
    for b, (n, s) in enumerate(seqs):
        ids[b, : len(s) - 1] = torch.tensor(s[:-1])
        tg[b, n + 1 : len(s) - 1] = torch.tensor(s[n + 2 :])
    return ids, lens, tg


def main():
    torch.manual_seed(0)
    rng = random.Random(0)
    model = Twin()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.98), weight_decay=0.01)
    for step in range(1500):
        ids, lens, tg = batch(rng, 64)
        loss = F.cross_entropy(model(ids, lens).reshape(-1, V), tg.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():  # teacher-forced exact-sequence accuracy = greedy accuracy
        ids, lens, tg = batch(random.Random(1), 1000)
        pred = model(ids, lens).argmax(-1)
        ok = ((pred == tg) | (tg == -100)).all(1).float().mean().item()
    print(f"final loss {loss.item():.4f}, exact-sequence accuracy {100 * ok:.1f}%")
    meta = dict(task="copy", symbols=SYMBOLS, min_len=MIN_LEN, max_len=MAX_LEN, layers=LAYERS,
                d_model=D, heads=H, d_ff=DFF, mode="fused", vocab=V, tmax=TMAX,
                accuracy=f"{ok:.4f}", written_by="bench/torch/make_init_fixture.py")
    st_writer.save_file({k: v.float() for k, v in model.state_dict().items()}, OUT, meta)
    print("wrote", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
