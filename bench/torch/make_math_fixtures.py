#!/usr/bin/python3
"""PyTorch reference fixtures for the elementwise math, rounding, activation,
comparison/selection, reduction and loss ops, read by tests/test_fixtures.c.

Run by hand from the repository root (CI needs no PyTorch):

    /usr/bin/python3 bench/torch/make_math_fixtures.py            # every file
    /usr/bin/python3 bench/torch/make_math_fixtures.py math       # some files

The layout is make_fixtures.py's (its Fixture class writes the files): per
case C, inputs C.X, C.out, C.w, C.grad.X, metadata "C.op" picking the
tapegrad function (the index into the runner's table in test_fixtures.c)
and the op's parameters. Shapes follow tinygrad's test_ops.py ((45, 65),
0-d, broadcasting pairs) and PyTorch's OpInfo samples (size-1 dims).
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures  # noqa: E402
from make_fixtures import D  # noqa: E402


def U(lo, hi, *shape):
    return torch.rand(shape, dtype=D) * (hi - lo) + lo


def case(fx, name, fn, grads, consts=None, finite=True, **params):
    """fx.case with fresh leaves: fn(**grads, **consts) -> output."""
    grads = {k: v.detach().clone() for k, v in grads.items()}
    consts = consts or {}
    fx.case(name, lambda: fn(**grads, **consts), grads, consts=consts, params=params, finite=finite)


def away(x, kinks, gap=0.05):
    """x with elements within gap of a kink moved 2 gaps past it."""
    x = x.clone()
    for k in kinks:
        x[(x - k).abs() < gap] = k + 2 * gap
    return x


def hardsigmoid(v):
    """F.hardsigmoid's values; its backward multiplies by 1/6 rounded to
    float32 even in float64 (relative 3e-8), this one by 1/6."""
    return torch.clamp(v + 3, 0, 6) / 6


# index = the op parameter; the same order as run_math in tests/test_fixtures.c
MATH = [
    ("sin", torch.sin, -4, 4, []), ("cos", torch.cos, -4, 4, []), ("exp2", torch.exp2, -3, 3, []),
    ("log2", torch.log2, 0.2, 4, []), ("log10", torch.log10, 0.2, 4, []), ("log1p", torch.log1p, -0.8, 3, []),
    ("expm1", torch.expm1, -3, 3, []), ("sign", torch.sign, -2, 2, [0]), ("reciprocal", torch.reciprocal, 0.3, 3, []),
    ("rsqrt", torch.rsqrt, 0.3, 3, []), ("square", torch.square, -2, 2, []), ("erf", torch.erf, -2.5, 2.5, []),
    ("silu", F.silu, -6, 6, []), ("softplus", F.softplus, -6, 6, []),
    ("softplus_b3_t4", lambda v: F.softplus(v, beta=3, threshold=4), -3, 3, [4 / 3]),
    ("leaky_relu", lambda v: F.leaky_relu(v, 0.1), -2, 2, [0]), ("elu", lambda v: F.elu(v, 0.7), -3, 3, [0]),
    ("selu", F.selu, -3, 3, [0]), ("celu", lambda v: F.celu(v, 1.5), -3, 3, [0]), ("mish", F.mish, -5, 5, []),
    ("hardswish", F.hardswish, -5, 5, [-3, 3]), ("hardsigmoid", hardsigmoid, -5, 5, [-3, 3]),
    ("hardtanh", lambda v: F.hardtanh(v, -0.5, 1.2), -2, 2, [-0.5, 1.2]), ("softsign", F.softsign, -4, 4, [0]),
    ("gelu_tanh", lambda v: F.gelu(v, approximate="tanh"), -4, 4, []),
]


def gen_math(fx):
    """Each unary kind on a (6, 7) input and a 0-d one, away from its kinks
    (tinygrad's (45, 65) is in tests/test_math.c); softplus on [-400, -300]
    (tinygrad's extreme)."""
    for k, (name, fn, lo, hi, kinks) in enumerate(MATH):
        for shape, tag in (((6, 7), ""), ((), "_0d")):
            x = away(U(lo, hi, *shape), kinks)
            case(fx, name + tag, lambda x: fn(x), {"x": x}, op=k)
    case(fx, "softplus_extreme", lambda x: F.softplus(x), {"x": U(-400, -300, 4, 5)}, op=13)


def gen_select(fx):
    """logaddexp, pow, lerp, maximum, minimum, where, masked_fill (op 0..6),
    max / min of every element (op 7, 8): broadcasting with a stretched dim
    separated by a kept one, ties for max/min."""
    pairs = (((6, 7), (6, 7)), ((4, 1, 5), (1, 3, 1)), ((3, 1), (2, 1, 4)))
    for i, (sa, sb) in enumerate(pairs):
        a, b = U(-3, 3, *sa), U(-3, 3, *sb)
        case(fx, f"logaddexp_{i}", torch.logaddexp, {"input": a, "other": b}, op=0)
        case(fx, f"pow_{i}", torch.pow, {"input": U(0.3, 3, *sa), "exponent": U(-2, 2, *sb)}, op=1)
        case(fx, f"lerp_{i}", torch.lerp, {"input": a, "end": b, "weight": U(-0.5, 1.5, *sb)}, op=2)
        case(fx, f"maximum_{i}", torch.maximum, {"input": a, "other": b}, op=3)
        case(fx, f"minimum_{i}", torch.minimum, {"input": a, "other": b}, op=4)
        c = (U(-1, 1, *sa) > 0).to(D)
        case(fx, f"where_{i}", lambda c, input, other: torch.where(c != 0, input, other), {"input": a, "other": b},
             {"c": c}, op=5)
        m = (U(-1, 1, *sb[-1:]) > 0).to(D)
        case(fx, f"masked_fill_{i}", lambda input, m: input.masked_fill(m != 0, 0.25), {"input": a}, {"m": m},
             op=6, value=0.25)
    ta = torch.tensor([[1.0, 0.0, 3.0, -4.0], [3.0, -2.0, 3.0, -4.0]], dtype=D)  # tinygrad's tie vals
    tb = torch.tensor([3.0], dtype=D)
    case(fx, "maximum_ties", torch.maximum, {"input": ta, "other": tb}, op=3)
    case(fx, "minimum_ties", torch.minimum, {"input": ta, "other": tb}, op=4)
    case(fx, "max_ties", torch.max, {"input": ta}, op=7)
    case(fx, "min_ties", torch.min, {"input": ta}, op=8)
    case(fx, "max", torch.max, {"input": U(-2, 2, 3, 4, 5)}, op=7)


def gen_along(fx):
    """min, prod, var, std, norm (op 0..4) along a dim, keepdim or not; cumsum,
    cumprod (5, 6); sort, topk values (7, 8). Params dim, keepdim,
    correction, ord, descending, k, largest. Shapes after tinygrad's
    (45, 3) / (3, 4, 5, 6) reductions and OpInfo's size-1 dims; prod and
    cumprod with zeros, and PyTorch's OpInfo samples for them."""
    inf = float("inf")
    for dim, keep in ((0, False), (-1, True), (1, False)):
        x = U(-2, 2, 3, 4, 5)
        tag = f"{dim if dim >= 0 else 'm' + str(-dim)}{'_keep' if keep else ''}"
        case(fx, f"min_{tag}", lambda x: torch.min(x, dim, keepdim=keep).values, {"x": x}, op=0, dim=dim,
             keepdim=int(keep))
        case(fx, f"prod_{tag}", lambda x: torch.prod(x, dim, keepdim=keep), {"x": x}, op=1, dim=dim,
             keepdim=int(keep))
        for c in (0, 1, 2):
            case(fx, f"var_c{c}_{tag}", lambda x: torch.var(x, dim, correction=c, keepdim=keep), {"x": x}, op=2,
                 dim=dim, keepdim=int(keep), correction=c)
            case(fx, f"std_c{c}_{tag}", lambda x: torch.std(x, dim, correction=c, keepdim=keep), {"x": x}, op=3,
                 dim=dim, keepdim=int(keep), correction=c)
        for o, on in ((1, "1"), (2, "2"), (inf, "inf")):
            case(fx, f"norm{on}_{tag}", lambda x: torch.linalg.vector_norm(x, o, dim, keepdim=keep), {"x": x},
                 op=4, dim=dim, keepdim=int(keep), ord=o)
        case(fx, f"cumsum_{tag}", lambda x: torch.cumsum(x, dim), {"x": x}, op=5, dim=dim)
        case(fx, f"cumprod_{tag}", lambda x: torch.cumprod(x, dim), {"x": x}, op=6, dim=dim)
        for desc in (0, 1):
            case(fx, f"sort_{tag}_{desc}", lambda x: torch.sort(x, dim, descending=bool(desc)).values, {"x": x},
                 op=7, dim=dim, descending=desc)
            case(fx, f"topk_{tag}_{desc}", lambda x: torch.topk(x, 2, dim, largest=bool(desc)).values, {"x": x},
                 op=8, dim=dim, k=2, largest=desc)
    z = U(-2, 2, 4, 5)
    z[1, 2] = 0
    z[3, 0] = z[3, 4] = 0
    case(fx, "prod_zeros", lambda x: torch.prod(x, 1), {"x": z}, op=1, dim=1, keepdim=0)
    case(fx, "cumprod_zeros", lambda x: torch.cumprod(x, 1), {"x": z}, op=6, dim=1)
    s1 = U(-2, 2, 1, 5, 1)
    case(fx, "std_size1", lambda x: torch.std(x, 1), {"x": s1}, op=3, dim=1, keepdim=0, correction=1)
    case(fx, "cumsum_size1", lambda x: torch.cumsum(x, 0), {"x": s1}, op=5, dim=0)
    case(fx, "norm2_0d", lambda x: torch.linalg.vector_norm(x, 2, 0), {"x": U(-2, 2)}, op=4, dim=0, keepdim=0, ord=2)
    # PyTorch's OpInfo samples for prod and cumprod (sample_inputs_prod / _cumprod): zeros placed
    # by narrow() in (5, 5, 5), a single zero in (5, 5), [2, 3, 0, 0], a 0-d zero
    S = 5
    single = U(-1, 1, S, S)
    single[0, 1] = 0
    case(fx, "opinfo_prod_single_zero", lambda x: torch.prod(x, 0), {"x": single.reshape(-1)}, op=1, dim=0, keepdim=0)
    for keep in (0, 1):
        case(fx, f"opinfo_prod_333_{keep}", lambda x: torch.prod(x, 1, keepdim=bool(keep)), {"x": U(-1, 1, 3, 3, 3)},
             op=1, dim=1, keepdim=keep)
        case(fx, f"opinfo_prod_zero_0d_{keep}", lambda x: torch.prod(x, 0, keepdim=bool(keep)),
             {"x": torch.zeros((), dtype=D)}, op=1, dim=0, keepdim=keep)
    case(fx, "opinfo_prod_2300", lambda x: torch.prod(x, 0), {"x": torch.tensor([2.0, 3, 0, 0], dtype=D)}, op=1,
         dim=0, keepdim=0)
    for d0, d1 in ((0, 1), (0, 2), (1, 2)):
        z = U(-1, 1, S, S, S)
        for a, b in ((0, 1), (2, 3), (4, 3)):
            z.narrow(d0, a, 1).narrow(d1, b, 1).zero_()
        case(fx, f"opinfo_cumprod_zeros_{d0}{d1}", lambda x: torch.cumprod(x, 1), {"x": z}, op=6, dim=1)
        case(fx, f"opinfo_prod_zeros_{d0}{d1}", lambda x: torch.prod(x, 1), {"x": z}, op=1, dim=1, keepdim=0)
    for dim in range(3):
        case(fx, f"opinfo_cumprod_{dim}", lambda x: torch.cumprod(x, dim), {"x": U(-1, 1, S, S, S)}, op=6, dim=dim)
    for shape in ((), (1,)):
        case(fx, f"opinfo_cumprod_{len(shape)}d", lambda x: torch.cumprod(x, 0), {"x": U(-1, 1, *shape)}, op=6, dim=0)


ROUNDING = [torch.floor, torch.ceil, torch.trunc, torch.round]  # op 0..3; remainder 4, fmod 5


def gen_rounding(fx):
    """floor, ceil, trunc, round (halves to even) on negatives, exact halves
    and integers and on (6, 7) off them; remainder (the divisor's sign) and
    fmod (the dividend's) with divisors of both signs, broadcasting with
    a / b off the integers (where d/db jumps) and exact multiples; x % 0 is
    NaN, its d/db -floor(a / 0) = -+inf (NaN for 0 / 0)."""
    T = lambda *v: torch.tensor(v, dtype=D)  # noqa: E731
    edges = T(-3.5, -2.5, -1.5, -0.5, -0.0, 0.5, 1.5, 2.5, 3.5, -2.7, -2.3, -1.0, -0.3, 0.3, 1.0, 2.3, 2.7, 4.0)
    for k, fn in enumerate(ROUNDING):
        name = fn.__name__
        case(fx, f"{name}_edges", fn, {"input": edges}, op=k)
        steps = [h / 2 for h in range(-10, 11)]  # integers and halves: rounding in float32 moves none
        case(fx, name, fn, {"input": away(U(-5, 5, 6, 7), steps)}, op=k)
    a = T(5.5, -5.5, 5.5, -5.5, 7, -7, 7, -7, 6, -6, 0.75, -0.75, 0.0)
    b = T(2, 2, -2, -2, 3, 3, -3, -3, 3, 3, 0.5, 0.5, 1.5)
    z = T(3, -3, 0, 0.5)
    pairs = (((6, 7), (6, 7)), ((4, 1, 5), (1, 3, 1)), ((3, 1), (2, 1, 4)))
    for op, fn in ((4, torch.remainder), (5, torch.fmod)):
        name = fn.__name__
        case(fx, f"{name}_signs", fn, {"input": a, "other": b}, op=op)
        case(fx, f"{name}_zero", fn, {"input": z, "other": torch.zeros(4, dtype=D)}, finite=False, op=op)
        for i, (sa, sb) in enumerate(pairs):
            d = U(1.1, 1.6, *sb) * torch.sign(U(-1, 1, *sb))
            q = away(U(-4, 4, *sa) / d, range(-4, 5), 0.1)  # a / b off the integers
            case(fx, f"{name}_{i}", fn, {"input": q * d, "other": d}, op=op)


RED = ["mean", "sum", "none"]  # tg_reduction's order


def gen_losses(fx):
    """cross_entropy with class targets (op 0) and probabilities (1), nll (2),
    binary_cross_entropy (3) and with logits (4), mse, l1, smooth_l1, huber
    (5..8), each reduction (param reduction = 0 mean, 1 sum, 2 none). Logits
    [N, C] and tinygrad's [(32,), (32,)] / (4, 4, 4, 8) (class dim last);
    class weights (cw: C.w is the fixture's output weighting), label smoothing, ignore_index -100 and 1; tinygrad's
    pos_weight list on (32, 10)."""
    N, C = 6, 5
    t = torch.randint(0, C, (N,)).to(D)
    t_ign = t.clone()
    t_ign[[1, 4]] = -100
    wc = U(0.5, 2, C)
    for ri, red in enumerate(RED):
        x = U(-3, 3, N, C)
        case(fx, f"ce_{red}", lambda x, t: F.cross_entropy(x, t.long(), reduction=red), {"x": x}, {"t": t},
             op=0, reduction=ri)
        case(fx, f"ce_all_{red}", lambda x, t, cw: F.cross_entropy(x, t.long(), weight=cw, reduction=red,
                                                                 label_smoothing=0.1),
             {"x": x}, {"t": t_ign, "cw": wc}, op=0, reduction=ri, smoothing=0.1)
        q = torch.softmax(U(-2, 2, N, C), -1)
        case(fx, f"ce_probs_{red}", lambda x, q, cw: F.cross_entropy(x, q, weight=cw, reduction=red, label_smoothing=0.2),
             {"x": x, "q": q}, {"cw": wc}, op=1, reduction=ri, smoothing=0.2)
        lp = torch.log_softmax(U(-3, 3, N, C), -1)
        case(fx, f"nll_{red}", lambda x, t, cw: F.nll_loss(x, t.long(), weight=cw, reduction=red), {"x": lp},
             {"t": t_ign, "cw": wc}, op=2, reduction=ri)
        p, y, wb = U(0.02, 0.98, N, C), U(0, 1, N, C), U(0.5, 2, C)
        case(fx, f"bce_{red}", lambda x, y, cw: F.binary_cross_entropy(x, y, weight=cw, reduction=red),
             {"x": p, "y": y}, {"cw": wb}, op=3, reduction=ri)
        pw = U(0.25, 4, C)
        case(fx, f"bcel_{red}", lambda x, y, cw, pw: F.binary_cross_entropy_with_logits(
            x, y, weight=cw, pos_weight=pw, reduction=red), {"x": x, "y": y}, {"cw": wb, "pw": pw}, op=4, reduction=ri)
        a, b = U(-2, 2, 4, 7), U(-2, 2, 4, 7)
        case(fx, f"mse_{red}", lambda x, y: F.mse_loss(x, y, reduction=red), {"x": a, "y": b}, op=5, reduction=ri)
        case(fx, f"l1_{red}", lambda x, y: F.l1_loss(x, y, reduction=red), {"x": a, "y": b}, op=6, reduction=ri)
        for beta in (1.0, 0.5):
            a2 = away(a - b, [-beta, beta]) + b
            case(fx, f"smooth_l1_b{int(beta * 10)}_{red}", lambda x, y: F.smooth_l1_loss(x, y, reduction=red, beta=beta),
                 {"x": a2, "y": b}, op=7, reduction=ri, beta=beta)
            case(fx, f"huber_d{int(beta * 20)}_{red}", lambda x, y: F.huber_loss(x, y, reduction=red, delta=2 * beta),
                 {"x": away(a - b, [-2 * beta, 2 * beta]) + b, "y": b}, op=8, reduction=ri, delta=2 * beta)
    tp = torch.softmax(U(-2, 2, 32), -1)
    case(fx, "ce_probs_1d", lambda x, q: F.cross_entropy(x, q), {"x": U(-2, 2, 32), "q": tp}, op=1, reduction=0)
    x4 = U(-2, 2, 4, 4, 4, 8)
    q4 = torch.softmax(U(-2, 2, 4, 4, 4, 8), -1)
    case(fx, "ce_probs_4d", lambda x, q: F.cross_entropy(x.movedim(-1, 1), q.movedim(-1, 1)), {"x": x4, "q": q4},
         op=1, reduction=0)
    pos = torch.tensor([0.25, 0.5, 0.75, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], dtype=D)  # tinygrad's
    case(fx, "bcel_pos_weight_32x10", lambda x, y, pw: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw),
         {"x": U(-2, 2, 32, 10), "y": U(0, 1, 32, 10)}, {"pw": pos}, op=4, reduction=0)
    ti = torch.tensor([2, 1, 0, 1], dtype=D)
    case(fx, "ce_ignore_1", lambda x, t: F.cross_entropy(x, t.long(), ignore_index=1), {"x": U(-2, 2, 4, 3)},
         {"t": ti}, op=0, reduction=0, ignore_index=1)


FAMILIES = {"math": gen_math, "select": gen_select, "along": gen_along, "losses": gen_losses,
            "rounding": gen_rounding}


if __name__ == "__main__":
    make_fixtures.main(sys.argv[1:], FAMILIES, "bench/torch/make_math_fixtures.py")
