#!/usr/bin/python3
"""PyTorch twin of the toy model (nn/model.h) and of seqtask train
on a generated task, for bench/bench_model.c and scripts/bench.sh.

    /usr/bin/python3 bench/torch/bench_model.py --step  [flags]   one training step, timed
    /usr/bin/python3 bench/torch/bench_model.py --train [flags]   time to the target accuracy

Flags take seqtask train's names and defaults (bench.sh passes the ones
`seqtask train --help` prints): --task --symbols --min-len --max-len --layers
--d-model --heads --d-head --d-ff --dropout --batch --steps --lr --warmup
--schedule --optimizer --weight-decay --clip --seed --eval-every --eval-size
--target-acc --precision; plus --reps --burn-in --budget --threads (2). The --step ROW
line gives the median and best step and, as bench_model's, the process's CPU
time per step (every thread) next to the wall time, means over the timed steps.

The model: h = tok_emb[ids] + pos_emb[0..T-1]; per block h += attn(ln1(h)),
h += ff(ln2(h)) (causal mask + key padding from the lengths, MHA written as
tapegrad's fused mode computes it: packed in_proj, masked_fill(-inf) + softmax); logits =
head(ln_f(h)); LayerNorm eps 1e-5, GELU erf, no weight tying; PyTorch's
default inits (those of nn.MultiheadAttention for in_proj / out_proj).
Training as seqtask: AdamW betas (0.9, 0.98) without decay on 1-D
parameters, linear warmup then cosine / linear decay to lr/10 at --steps,
clip_grad_norm_, cross-entropy on the positions that predict y1..ym and EOS.
The data follow seqtask's task.c: source lengths uniform in [min, max],
symbols uniform, the same hash split of the source space (one in 16 held
out), the evaluation set drawn from the held-out part; evaluation is greedy
decoding with the same shortcut (one teacher-forced pass, then token by token
only for the rows that went wrong), every --eval-every steps; the clock runs
from the first step to the evaluation that reaches the target, as seqtask's.
The random streams differ from seqtask's (numpy, not PCG32).

--precision bf16 runs the forward and the loss under
torch.autocast("cpu", dtype=torch.bfloat16), backward outside it (PyTorch's
AMP recipe); weights, grads and the optimizer stay float32. PyTorch 1.13's CPU
autocast also returns its products (linear, matmul) in bfloat16, so the ops
after them (GELU, softmax, the scale) run on bfloat16 values, where tapegrad's
autocast returns float32 products. --train --log-losses N prints the first N
steps' training losses, one "LOSS step=i loss=x" line each.
"""
import argparse
import math
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, SEP, EOS, SYM0 = 0, 1, 2, 3, 4
HOLDOUT_MOD = 16
M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


# ---- the model -------------------------------------------------------------------

class MHA(nn.Module):
    """nn.MultiheadAttention's parameters and init, tapegrad's forward."""

    def __init__(self, d_model, n_heads, d_head, dropout):
        super().__init__()
        self.h, self.dh = n_heads, d_head
        E = n_heads * d_head
        self.in_proj_weight = nn.Parameter(torch.empty(3 * E, d_model))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * E))
        self.out_proj = nn.Linear(E, d_model)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)
        self.dropout = dropout

    def forward(self, x, masked):
        B, T, _ = x.shape
        E = self.h * self.dh
        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).split(E, dim=-1)
        q = q.view(B, T, self.h, self.dh).transpose(1, 2)
        k = k.view(B, T, self.h, self.dh).transpose(1, 2)
        v = v.view(B, T, self.h, self.dh).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.dh))
        a = F.softmax(s.masked_fill(masked, float("-inf")), dim=-1)
        a = F.dropout(a, self.dropout, self.training)
        return self.out_proj((a @ v).transpose(1, 2).reshape(B, T, E))


class FFN(nn.Module):
    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.fc1, self.fc2, self.dropout = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), dropout

    def forward(self, x):
        return F.dropout(self.fc2(F.gelu(self.fc1(x))), self.dropout, self.training)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln1 = nn.LayerNorm(c.d_model, eps=1e-5)
        self.attn = MHA(c.d_model, c.heads, c.d_head, c.dropout)
        self.ln2 = nn.LayerNorm(c.d_model, eps=1e-5)
        self.ff = FFN(c.d_model, c.d_ff, c.dropout)

    def forward(self, h, masked):
        h = h + self.attn(self.ln1(h), masked)
        return h + self.ff(self.ln2(h))


class ToyModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        V, tmax = c.symbols + 4, 2 * c.max_len + 3
        self.tok_emb = nn.Embedding(V, c.d_model)
        self.pos_emb = nn.Embedding(tmax, c.d_model)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.d_model, eps=1e-5)
        self.head = nn.Linear(c.d_model, V)

    def forward(self, ids, lens):
        B, T = ids.shape
        pos = torch.arange(T)
        h = self.tok_emb(ids) + self.pos_emb(pos)
        causal = pos[None, :] > pos[:, None]                       # [T, T] j > i
        pad = pos[None, :] >= lens[:, None]                         # [B, T] j >= len
        masked = causal[None, None] | pad[:, None, None, :]         # [B, 1, T, T]
        for blk in self.blocks:
            h = blk(h, masked)
        return self.head(self.ln_f(h))


# ---- the task (seqtask/task.c) -----------------------------------------------------

def mix64(x):
    """splitmix64's finaliser, elementwise on uint64 arrays (wrapping)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def heldout(src, n):
    """sq_is_heldout for rows src [N, max_len] with lengths n [N]."""
    h = mix64(n.astype(np.uint64))
    for i in range(src.shape[1]):
        upd = mix64(h ^ src[:, i].astype(np.uint64))
        h = np.where(i < n, upd, h)
    return h % np.uint64(HOLDOUT_MOD) == 0


def target(task, src, n):
    out = src.copy()
    for r in range(len(n)):
        k = n[r]
        if task == "reverse":
            out[r, :k] = src[r, :k][::-1]
        elif task == "sort":
            out[r, :k] = np.sort(src[r, :k])
    return out


class Task:
    def __init__(self, c, seed_offset):
        self.c = c
        self.rng = np.random.default_rng(c.seed * 1000 + seed_offset)

    def draw(self, count, want_heldout):
        c, rows, lens = self.c, [], []
        while sum(len(r) for r in rows) < count:
            N = 4 * count if not want_heldout else 32 * count
            n = self.rng.integers(c.min_len, c.max_len + 1, size=N)
            src = self.rng.integers(0, c.symbols, size=(N, c.max_len))
            src[np.arange(c.max_len)[None, :] >= n[:, None]] = 0
            keep = heldout(src, n) == want_heldout
            rows.append(src[keep]), lens.append(n[keep])
        src, n = np.concatenate(rows)[:count], np.concatenate(lens)[:count]
        return src, n, target(self.c.task, src, n)


def make_batch(src, n, tgt):
    """ids, targets [B, T] and lens [B] as seqtask's sq_batch_fill."""
    B = len(n)
    T = int((2 * n + 2).max())
    ids = np.zeros((B, T), dtype=np.int64)
    tg = np.full((B, T), -100, dtype=np.int64)
    for r in range(B):
        k = int(n[r])
        seq = np.concatenate(([BOS], SYM0 + src[r, :k], [SEP], SYM0 + tgt[r, :k], [EOS]))
        L = len(seq)
        ids[r, :L - 1] = seq[:L - 1]
        tg[r, k + 1:L - 1] = seq[k + 2:L]
    return torch.from_numpy(ids), torch.from_numpy(tg), torch.from_numpy(2 * n.astype(np.int64) + 2)


# ---- training pieces ---------------------------------------------------------------

def lr_at(c, step):
    """optim/schedule.c's tg_lr_at."""
    lo = c.lr / 10
    if step < c.warmup:
        return c.lr * (step + 1) / c.warmup
    if c.schedule == "constant":
        return c.lr
    if step >= c.steps:
        return lo
    r = (step - c.warmup) / (c.steps - c.warmup)
    if c.schedule == "cosine":
        return lo + (c.lr - lo) * (1 + math.cos(math.pi * r)) / 2
    return c.lr - (c.lr - lo) * r


def make_optimizer(c, model):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    if c.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=c.lr, betas=(0.9, 0.98), weight_decay=c.weight_decay)
    return torch.optim.AdamW([{"params": decay, "weight_decay": c.weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=c.lr, betas=(0.9, 0.98))


def train_step(c, model, opt, step, ids, tg, lens):
    V = c.symbols + 4
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=c.precision == "bf16"):
        logits = model(ids, lens)
        loss = F.cross_entropy(logits.view(-1, V), tg.view(-1), ignore_index=-100)
    opt.zero_grad()
    loss.backward()
    if c.clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip)
    for g in opt.param_groups:
        g["lr"] = lr_at(c, step)
    opt.step()
    return loss.item()


@torch.no_grad()
def evaluate(c, model, ev):
    """Exact-sequence accuracy of greedy decoding (seqtask/eval.c's shortcut)."""
    model.eval()
    src, n, tgt = ev
    tmax = 2 * c.max_len + 3
    exact = 0
    for i0 in range(0, len(n), 256):
        s, k, t = src[i0:i0 + 256], n[i0:i0 + 256], tgt[i0:i0 + 256]
        ids, tg, lens = make_batch(s, k, t)
        pred = model(ids, lens).argmax(-1)
        pending = []
        for r in range(len(k)):
            kk = int(k[r])
            want = tg[r, kk + 1:2 * kk + 2]
            got = pred[r, kk + 1:2 * kk + 2]
            bad = (got != want).nonzero()
            if len(bad) == 0:
                exact += 1
                continue
            j = int(bad[0])
            seq = ids[r, :kk + 2 + j].tolist() + [int(got[j])]
            if seq[-1] != EOS and len(seq) < tmax:
                pending.append((seq, [int(x) for x in want]))
        while pending:  # token by token, all pending rows in one pass
            T = max(len(s) for s, _ in pending)
            ids = torch.zeros(len(pending), T, dtype=torch.long)
            for r, (s, _) in enumerate(pending):
                ids[r, :len(s)] = torch.tensor(s)
            lens = torch.tensor([len(s) for s, _ in pending])
            logits = model(ids, lens)
            nxt = []
            for r, (s, w) in enumerate(pending):
                s.append(int(logits[r, len(s) - 1].argmax()))
                if s[-1] != EOS and len(s) < tmax:
                    nxt.append((s, w))
            pending = nxt  # rows that went wrong once can never be exact
    model.train()
    return exact / len(n)


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def run_step(c):
    torch.manual_seed(c.seed)
    (torch.randn(256, 256) @ torch.randn(256, 256)).sum().item()
    base = rss_mib()
    model = ToyModel(c)
    opt = make_optimizer(c, model)
    task = Task(c, 1)
    ids, tg, lens = make_batch(*task.draw(c.batch, False))
    times = []
    for i in range(c.burn_in):
        train_step(c, model, opt, i, ids, tg, lens)
    start, cpu0 = time.perf_counter(), time.process_time()
    while len(times) < c.reps:
        t0 = time.perf_counter()
        train_step(c, model, opt, c.burn_in + len(times), ids, tg, lens)
        t1 = time.perf_counter()
        times.append((t1 - t0) * 1e3)
        if len(times) >= 3 and t1 - start > c.budget:
            break
    wall, cpu = (time.perf_counter() - start) * 1e3 / len(times), (time.process_time() - cpu0) * 1e3 / len(times)
    times.sort()
    m = len(times)
    med = times[m // 2] if m % 2 else 0.5 * (times[m // 2 - 1] + times[m // 2])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"ROW bench=model impl=torch tag={c.tag} precision={c.precision} B={c.batch} T={ids.shape[1]} D={c.d_model} "
          f"layers={c.layers} heads={c.heads} threads={torch.get_num_threads()} reps={m} ms={med:.4f} "
          f"min_ms={times[0]:.4f} cpu_ms={cpu:.4f} wall_ms={wall:.4f} peak_rss_mib={peak:.1f} base_rss_mib={base:.1f} "
          f"rss_delta_mib={peak - base:.1f}", flush=True)


def run_train(c):
    torch.manual_seed(c.seed)
    model = ToyModel(c)
    opt = make_optimizer(c, model)
    task, ev = Task(c, 1), Task(c, 2).draw(c.eval_size, True)
    t0 = time.perf_counter()
    acc, step = 0.0, 0
    while step < c.steps:
        ids, tg, lens = make_batch(*task.draw(c.batch, False))
        loss = train_step(c, model, opt, step, ids, tg, lens)
        step += 1
        if step <= c.log_losses:
            print(f"LOSS step={step} loss={loss:.9g}", flush=True)
        if (c.eval_every and step % c.eval_every == 0) or step == c.steps:
            acc = evaluate(c, model, ev)
            print(f"eval step {step}: exact-sequence {100 * acc:.2f}%", file=sys.stderr, flush=True)
            if c.target_acc > 0 and acc >= c.target_acc:
                break
    secs = time.perf_counter() - t0
    reached = c.target_acc > 0 and acc >= c.target_acc
    print(f"ROW bench=model impl=torch tag=train task={c.task} steps={step} seconds={secs:.2f} "
          f"acc={100 * acc:.2f} steps_to_99={step if reached else 'not_reached'} "
          f"seconds_to_99={f'{secs:.2f}' if reached else 'not_reached'}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--step", action="store_true")
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--task", default="reverse", choices=["copy", "reverse", "sort"])
    for name, typ, default in [("symbols", int, 16), ("min-len", int, 4), ("max-len", int, 12),
                               ("layers", int, 2), ("d-model", int, 64), ("heads", int, 4),
                               ("d-head", int, 0), ("d-ff", int, 0), ("dropout", float, 0.0),
                               ("batch", int, 64), ("steps", int, 3000), ("lr", float, 0.003),
                               ("warmup", int, None), ("weight-decay", float, 0.01), ("clip", float, 1.0),
                               ("seed", int, 1), ("eval-every", int, 100), ("eval-size", int, 500),
                               ("target-acc", float, 0.99), ("reps", int, 30), ("burn-in", int, 3),
                               ("budget", float, 10.0), ("threads", int, 2)]:
        ap.add_argument("--" + name, type=typ, default=default)
    ap.add_argument("--schedule", default="cosine", choices=["constant", "cosine", "linear"])
    ap.add_argument("--optimizer", default="adamw", choices=["adam", "adamw", "sgd"])
    ap.add_argument("--tag", default="step")
    ap.add_argument("--precision", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--log-losses", type=int, default=0)
    ap.add_argument("--mode", default="fused")  # accepted for symmetry; the twin is fused
    c = ap.parse_args()
    if c.warmup is None:
        c.warmup = min(50, c.steps // 10)  # seqtask train's default
    c.d_head = c.d_head or c.d_model // c.heads
    c.d_ff = c.d_ff or 4 * c.d_model
    if c.optimizer == "sgd":
        print("bench_model.py: --optimizer sgd is run as AdamW", file=sys.stderr)
        c.optimizer = "adamw"
    torch.set_num_threads(c.threads)
    if c.train:
        run_train(c)
    else:
        run_step(c)


if __name__ == "__main__":
    sys.exit(main())
