#!/usr/bin/python3
"""PyTorch reference fixtures for tests/test_fixtures.c.

Run by hand (CI only reads the committed files, it needs no PyTorch):

    /usr/bin/python3 bench/torch/make_fixtures.py            # every file
    /usr/bin/python3 bench/torch/make_fixtures.py softmax    # some files

Writes tests/fixtures/<family>.safetensors, one file per op family, each
holding several cases. For a case C with inputs X, Y:

    C.X, C.Y           inputs (F64); C.X is differentiable iff C.grad.X exists
    C.out              the op's output
    C.w                a random weight shaped like C.out
    C.grad.X           d sum(C.out * C.w) / d C.X   (a random weighting, so the
                       gradients are not trivial: a plain sum would hide
                       softmax bugs since its rows sum to one)
    __metadata__:      "cases" = "C1,C2,..."; "C.grads" = "X,Y";
                       "C.<param>" = op parameters (flags, eps, scale, ...)

Integer inputs (token ids, targets, key lengths, 0/1 masks) are stored as
F64 too (exact) and converted by the test.

Everything is float64 and computed in float64: the double build compares
tightly (rtol 1e-10), the float build loads the same files (rounding the
inputs to float32) and compares with rtol 1e-4, atol 1e-5.

Adding fixtures (attention, the toy model, ...): write a function
gen_<family>(fx) that calls fx.case(...) for each case, add it to FAMILIES
below, and add a runner for the family to the table in
tests/test_fixtures.c (a fixture case the test does not know fails it).
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_writer  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures")
SEED = 1234
D = torch.float64


class Fixture:
    """The tensors and metadata of one fixture file."""

    def __init__(self, family):
        self.family = family
        self.tensors = {}
        self.meta = {"generator": "bench/torch/make_fixtures.py", "torch": torch.__version__,
                     "seed": str(SEED), "family": family}
        self.cases = []

    def case(self, name, forward, grads, consts=None, params=None, finite=True):
        """Records one case. grads: name -> leaf tensor to differentiate;
        consts: name -> tensor passed as is; forward() -> output (uses them).
        finite=False lets out and the grads hold NaN and inf (x % 0)."""
        assert name not in self.cases and "." not in name, name
        for t in grads.values():
            t.requires_grad_(True)
        out = forward()
        w = torch.randn(out.shape, dtype=D)
        (out * w).sum().backward()
        self.cases.append(name)
        for k, t in list(grads.items()) + list((consts or {}).items()):
            self.tensors[f"{name}.{k}"] = t.detach().to(D)
        self.tensors[f"{name}.out"] = out.detach()
        self.tensors[f"{name}.w"] = w
        for k, t in grads.items():
            g = t.grad if t.grad is not None else torch.zeros_like(t)
            assert not finite or torch.isfinite(g).all(), (name, k)
            self.tensors[f"{name}.grad.{k}"] = g.detach()
        assert not finite or torch.isfinite(out).all(), name
        self.meta[f"{name}.grads"] = ",".join(grads)
        for k, v in (params or {}).items():
            self.meta[f"{name}.{k}"] = repr(v) if isinstance(v, float) else str(v)

    def save(self):
        self.meta["cases"] = ",".join(self.cases)
        path = os.path.join(OUT_DIR, f"{self.family}.safetensors")
        st_writer.save_file(self.tensors, path, self.meta)
        back, meta = st_writer.load_file(path)  # the file reads back exactly
        assert meta == self.meta and all(same(back[k], v) for k, v in self.tensors.items())
        print(f"{path}: {len(self.cases)} cases, {len(self.tensors)} tensors, {os.path.getsize(path)} bytes")


def same(a, b):
    """a and b hold the same values, NaN where the other has NaN."""
    return torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b, rtol=0, atol=0, equal_nan=True))


def randn(*shape, scale=1.0):
    return torch.randn(*shape, dtype=D) * scale


# ---- families ----------------------------------------------------------------------

TRANS_A, TRANS_B = 1, 2  # tg_matmul's flags


def gen_matmul(fx):
    """out = op(a) @ op(b) (+ bias): each transpose flag, batched, broadcast."""
    def mm(name, a_shape, b_shape, flags, bias=None):
        a, b = randn(*a_shape), randn(*b_shape)
        grads = {"a": a, "b": b}
        if bias is not None:
            grads["bias"] = randn(bias)

        def forward():
            oa = a.transpose(-1, -2) if flags & TRANS_A else a
            ob = b.transpose(-1, -2) if flags & TRANS_B else b
            out = torch.matmul(oa, ob)
            return out + grads["bias"] if bias is not None else out
        fx.case(name, forward, grads, params={"flags": flags})

    mm("nn", (3, 4), (4, 5), 0)
    mm("tn", (4, 3), (4, 5), TRANS_A)
    mm("nt", (3, 4), (5, 4), TRANS_B)
    mm("tt", (4, 3), (5, 4), TRANS_A | TRANS_B)
    mm("bias", (3, 4), (4, 5), 0, bias=5)
    mm("bcast", (2, 3, 4), (4, 5), 0, bias=5)           # 2-D b broadcast over a's batch
    mm("bcast_ta", (2, 4, 3), (4, 5), TRANS_A)
    mm("bcast_tb", (2, 2, 3, 4), (5, 4), TRANS_B, bias=5)
    mm("batched", (2, 3, 4), (2, 4, 5), 0)               # b with a's batch dims
    mm("batched_tt", (2, 2, 4, 3), (2, 2, 5, 4), TRANS_A | TRANS_B)


def gen_linear(fx):
    """nn.Linear: y = x W^T + b (tapegrad: tg_matmul(x, W, b, TG_TRANS_B))."""
    for name, x_shape, bias in (("bias", (2, 3, 4), True), ("nobias", (6, 4), False)):
        x, weight = randn(*x_shape), randn(5, 4, scale=0.5)
        grads = {"x": x, "weight": weight}
        if bias:
            grads["bias"] = randn(5)
        fx.case(name, lambda: F.linear(x, weight, grads.get("bias")), grads)


def gen_softmax(fx):
    x = randn(2, 3, 5, scale=2.0)
    fx.case("basic", lambda: torch.softmax(x, -1), {"x": x})
    big = randn(3, 4)
    big[0] += 100.0        # stability: the row max is subtracted
    big[1, 1] = -1000.0    # an entry whose exp underflows
    fx.case("large", lambda: torch.softmax(big, -1), {"x": big})


def gen_log_softmax(fx):
    x = randn(3, 6, scale=3.0)
    fx.case("basic", lambda: torch.log_softmax(x, -1), {"x": x})
    big = randn(2, 2, 5)
    big[0, 0] += 80.0
    fx.case("large", lambda: torch.log_softmax(big, -1), {"x": big})


def visible(B, Lq, Lk, causal=False, key_lens=None, key_keep=None, window=0, keep=None, additive=None):
    """[B, 1, Lq, Lk] bool, True = visible. The file's 0/1 arrays key_keep and keep
    mean 1 = attend; tests/test_fixtures.c turns them into tg_mask's tensors
    (key_padding and attn, True = masked, as PyTorch's; with additive, one float
    attn with -inf where keep is 0)."""
    i = torch.arange(Lq).view(Lq, 1)
    j = torch.arange(Lk).view(1, Lk)
    vis = torch.ones(B, Lq, Lk, dtype=torch.bool)
    if causal:
        vis &= j <= i
    if window:
        vis &= (i - j).abs() < window
    if key_lens is not None:
        vis &= j.view(1, 1, Lk) < key_lens.view(B, 1, 1)
    if key_keep is not None:
        vis &= key_keep.view(B, 1, Lk) != 0
    if keep is not None:
        vis &= (keep if keep.dim() == 3 else keep.unsqueeze(0)) != 0
    if additive is not None:
        vis &= additive.unsqueeze(0) != -math.inf
    return vis.unsqueeze(1)


def gen_softmax_masked(fx):
    """softmax(x * scale + additive) with masked entries at zero weight.

    PyTorch's masked_fill(-inf) + softmax gives NaN in a row whose keys are all
    masked, where tapegrad gives zeros (and zero gradient). The forward
    reference is computed exactly that way and its NaN rows are then replaced
    by 0 explicitly; the gradients come from an equivalent NaN-free path (fully
    masked rows filled with 0 before the softmax and multiplied by 0 after),
    checked equal to it."""
    def case(name, shape, scale, consts, rules):
        x = randn(*shape, scale=1.5)  # [B, H, Lq, Lk] or [B, Lq, Lk]
        vis = visible(shape[0], shape[-2], shape[-1], **rules)
        if len(shape) == 3:
            vis = vis.squeeze(1)
        Lq, Lk = shape[-2], shape[-1]
        add = rules.get("additive")
        add = torch.zeros(Lq, Lk, dtype=D) if add is None else add

        def naive():
            s = (x * scale + add).masked_fill(~vis, -math.inf)
            p = torch.softmax(s, -1)
            return torch.where(torch.isnan(p), torch.zeros_like(p), p)  # NaN rows -> 0 (tapegrad's rule)

        def forward():
            row_ok = vis.any(-1, keepdim=True)
            s = (x * scale + add.masked_fill(add == -math.inf, 0.0)).masked_fill(~vis, -math.inf)
            return torch.softmax(s.masked_fill(~row_ok, 0.0), -1) * row_ok
        with torch.no_grad():
            assert torch.equal(naive(), forward()), name
            assert torch.isnan(torch.softmax((x * scale + add).masked_fill(~vis, -math.inf), -1)).any() == \
                (~vis.any(-1)).any()
        params = {"scale": scale, "causal": int(rules.get("causal", False)), "window": rules.get("window", 0)}
        fx.case(name, forward, {"x": x}, consts=consts, params=params)

    # causal + key padding (a [B, Lk] 0/1 keep array); batch 1's first query
    # sees only key 0, which is padding: a fully masked row.
    kk = torch.tensor([[1, 1, 1, 0], [0, 1, 1, 1]], dtype=D)
    case("causal_keep", (2, 2, 4, 4), 0.5, {"key_keep": kk}, {"causal": True, "key_keep": kk})
    # per-sequence key lengths, 3-D scores, cross-attention shape (Lq != Lk);
    # length 0 masks every row of batch 1
    lens = torch.tensor([3, 0, 5], dtype=D)
    case("lens", (3, 2, 5), 1.0, {"key_lens": lens}, {"key_lens": lens})
    # sliding window with causal
    case("window", (1, 2, 5, 5), 0.7, {}, {"causal": True, "window": 2})
    # an arbitrary batched 0/1 mask and an additive mask with a -inf entry
    keep = (torch.rand(2, 3, 4) > 0.3).to(D)
    keep[0, 1] = 0.0  # a fully masked row
    add = randn(3, 4, scale=0.5)
    add[2, 1] = -math.inf
    case("keep_additive", (2, 1, 3, 4), 0.9, {"keep": keep, "additive": add}, {"keep": keep, "additive": add})


def gen_layernorm(fx):
    x, weight, bias = randn(2, 3, 8, scale=2.0) + 0.5, randn(8), randn(8)
    fx.case("affine", lambda: F.layer_norm(x, (8,), weight, bias, eps=1e-5),
            {"x": x, "weight": weight, "bias": bias}, params={"eps": 1e-5})
    x2 = randn(4, 6)
    fx.case("plain", lambda: F.layer_norm(x2, (6,), eps=1e-3), {"x": x2}, params={"eps": 1e-3})


def rms_norm(x, weight, eps):
    """nn.RMSNorm (torch 1.13 has none): x / sqrt(mean(x^2) + eps) * weight."""
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight


def gen_rmsnorm(fx):
    x, weight = randn(2, 3, 11, scale=2.0) + 0.5, randn(11)
    fx.case("affine", lambda: rms_norm(x, weight, 1e-5), {"x": x, "weight": weight}, params={"eps": 1e-5})
    x2 = randn(4, 6)
    fx.case("plain", lambda: rms_norm(x2, None, 1e-3), {"x": x2}, params={"eps": 1e-3})


def gen_gelu(fx):
    x = torch.rand(3, 7, dtype=D) * 8 - 4
    x[0, 0] = 0.0
    fx.case("erf", lambda: F.gelu(x), {"x": x})


def gen_embedding(fx):
    weight = randn(7, 4)
    ids = torch.tensor([[1, 3, 3, 0, 6], [3, 2, 1, 1, 5]])  # repeats accumulate in backward
    fx.case("repeat", lambda: F.embedding(ids, weight), {"weight": weight}, consts={"ids": ids.to(D)})


def gen_cross_entropy(fx):
    """Mean over the targets that are not ignored. When every target is
    ignored PyTorch returns NaN (0/0) and tapegrad 0: the reference is
    sum / max(count, 1), checked equal to PyTorch's mean otherwise."""
    def case(name, shape, targets):
        logits = randn(*shape, scale=2.0)
        V = shape[-1]
        tg = torch.tensor(targets)
        count = int((tg != -100).sum())

        def forward():
            s = F.cross_entropy(logits.reshape(-1, V), tg, ignore_index=-100, reduction="sum")
            return s / max(count, 1)
        if count:
            with torch.no_grad():
                mean = F.cross_entropy(logits.reshape(-1, V), tg, ignore_index=-100)
                assert torch.allclose(forward(), mean, rtol=1e-14, atol=0), name
        fx.case(name, forward, {"logits": logits}, consts={"targets": tg.to(D)}, params={"ignore_index": -100})

    case("ignore", (6, 5), [1, -100, 4, 0, -100, 2])
    case("3d", (2, 3, 5), [0, 1, 2, 3, 4, -100])
    case("all_ignored", (2, 5), [-100, -100])


def gen_broadcast(fx):
    """add, sub, mul, div (param op = 0..3) with NumPy broadcasting: size-1
    dims, 0-d scalars and rank differences on either side. b is kept in
    [0.5, 2] so div is smooth."""
    ops = [torch.add, torch.sub, torch.mul, torch.div]
    shapes = [((2, 3, 4), (4,)), ((4,), (2, 3, 4)), ((2, 3, 4), (3, 1)), ((2, 1, 4), (3, 1)),
              ((2, 1, 3, 1), (4, 1, 2)), ((2, 3), ()), ((), (2, 3)), ((2, 3), (1,)), ((3, 4), (3, 4))]
    for k, name in enumerate(["add", "sub", "mul", "div"]):
        for i, (sa, sb) in enumerate(shapes):
            a, b = torch.randn(sa, dtype=D), torch.rand(sb, dtype=D) * 1.5 + 0.5
            fx.case(f"{name}{i}", lambda: ops[k](a, b), {"a": a, "b": b}, params={"op": k})


def gen_unary(fx):
    """exp, log, sqrt, sigmoid, pow, neg, abs, clamp (param op = 0..7), each on
    inputs in its domain and away from its kinks."""
    def case(name, k, x, forward, **params):
        x = x.detach().clone()                          # a leaf of its own per case
        fx.case(name, lambda: forward(x), {"x": x}, params={"op": k, **params})
    x = torch.rand(3, 5, dtype=D) * 6 - 3
    away = x + torch.sign(x) * 0.1                      # |x| >= 0.1: no kink at 0
    pos = torch.rand(2, 3, 4, dtype=D) * 3 + 0.2
    case("exp", 0, x, torch.exp)
    case("log", 1, pos, torch.log)
    case("sqrt", 2, pos, torch.sqrt)
    case("sigmoid", 3, x * 3, torch.sigmoid)
    case("pow2", 4, x, lambda v: torch.pow(v, 2.0), p=2.0)
    case("pow_half", 4, pos, lambda v: torch.pow(v, 0.5), p=0.5)
    case("pow_neg", 4, pos, lambda v: torch.pow(v, -1.5), p=-1.5)
    case("neg", 5, x, torch.neg)
    case("abs", 6, away, torch.abs)
    grid = torch.linspace(-2.05, 2.05, 12, dtype=D).view(3, 4)  # none on a bound
    case("clamp", 7, grid, lambda v: torch.clamp(v, -1.0, 1.5), lo=-1.0, hi=1.5)


def gen_reduce(fx):
    """sum, mean, max, logsumexp along one dim (param op = 0..3), negative
    dims, keepdim. Distinct values, so max has one maximum per slice."""
    ops = [lambda v, d, k: torch.sum(v, d, keepdim=k), lambda v, d, k: torch.mean(v, d, keepdim=k),
           lambda v, d, k: torch.max(v, d, keepdim=k).values, lambda v, d, k: torch.logsumexp(v, d, keepdim=k)]
    for k, name in enumerate(["sum", "mean", "max", "logsumexp"]):
        for dim, keep in ((0, False), (1, True), (-1, False), (-3, True)):
            x = torch.randn(2, 3, 4, dtype=D) * 2
            fx.case(f"{name}_{dim if dim >= 0 else 'm' + str(-dim)}{'_keep' if keep else ''}",
                    lambda: ops[k](x, dim, keep), {"x": x}, params={"op": k, "dim": dim, "keepdim": int(keep)})


# Attention (both modes) and the toy model go here when they land:
#     def gen_attention(fx): fx.case("self_fused", forward, {...}, params={...})
#     FAMILIES["attention"] = gen_attention
FAMILIES = {
    "matmul": gen_matmul,
    "linear": gen_linear,
    "softmax": gen_softmax,
    "log_softmax": gen_log_softmax,
    "softmax_masked": gen_softmax_masked,
    "layernorm": gen_layernorm,
    "rmsnorm": gen_rmsnorm,
    "gelu": gen_gelu,
    "embedding": gen_embedding,
    "cross_entropy": gen_cross_entropy,
    "broadcast": gen_broadcast,
    "unary": gen_unary,
    "reduce": gen_reduce,
}


def main(argv, families=FAMILIES, generator="bench/torch/make_fixtures.py"):
    names = argv or list(families)
    unknown = [n for n in names if n not in families]
    if unknown:
        sys.exit(f"unknown family {unknown}; known: {', '.join(families)}")
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.set_default_dtype(D)
    for name in names:
        torch.manual_seed(SEED)  # each file is reproducible on its own
        fx = Fixture(name)
        fx.meta["generator"] = generator
        families[name](fx)
        fx.save()


if __name__ == "__main__":
    main(sys.argv[1:])
