#!/usr/bin/python3
"""PyTorch reference fixtures for the reductions over several dims
(core/ops/reduce/multi.c; tests/test_fixtures.c, family "multi"). Same file
layout as make_fixtures.py, whose Fixture class writes them. Run by hand (CI
only reads the committed files):

    /usr/bin/python3 bench/torch/make_multi_fixtures.py

A case's "op" parameter is MULTI_OPS' index; "dims" is comma-separated
("" for dim=None), "ord" and "correction" are floats (inf as 'inf').
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402

D = mf.D
MULTI_OPS = ["mean", "var", "std", "norm"]


def tag(v):
    return str(v).replace(".", "_").replace("-", "m")


def gen_multi(fx):
    r = mf.randn

    def case(name, op, x, dims, keepdim, forward, **params):
        fx.case(name, lambda: forward(x), {"x": x},
                params={"op": MULTI_OPS.index(op), "dims": ",".join(map(str, dims)), "n": len(dims),
                        "keepdim": int(keepdim), **params})

    dim_sets = [(0, 2), (-1, 1), (1,), ()]
    for k, dims in enumerate(dim_sets):
        d = dims or (0, 1, 2)  # dim=None: every dim
        keep = k % 2 == 1
        case(f"mean_{k}", "mean", r(3, 4, 5), dims, keep, lambda x: x.mean(d, keepdim=keep))
        for corr in (0, 1, 2):  # PyTorch 1.13 takes an int correction
            case(f"var_{k}_{tag(corr)}", "var", r(3, 4, 5), dims, keep,
                 lambda x, c=corr: torch.var(x, d, correction=c, keepdim=keep),
                 correction=corr)
            case(f"std_{k}_{tag(corr)}", "std", r(3, 4, 5), dims, keep,
                 lambda x, c=corr: torch.std(x, d, correction=c, keepdim=keep),
                 correction=corr)
    # OpInfo's sample_inputs_linalg_vector_norm ords: 2, inf, -inf, 0, 1, 3.5, 0.5 (p in (0, 1) with inputs away
    # from 0), -1.5
    for ordv in (2.0, float("inf"), float("-inf"), 0.0, 1.0, 3.5, 0.5, -1.5):
        for k, dims in enumerate(dim_sets):
            d = dims or None
            keep = k % 2 == 0
            x = r(3, 4, 5)
            if ordv < 1:
                x = x.sign() * (x.abs() + 0.3)
            case(f"norm_{tag(ordv)}_{k}", "norm", x, dims, keep,
                 lambda x, o=ordv: torch.linalg.vector_norm(x, o, d, keepdim=keep), ord=ordv)
    # ties in the inf norm share the grad evenly
    x = torch.tensor([[1.0, -3, 3, 2], [3, 3, -3, 0.5]])
    case("norm_inf_ties", "norm", x, (0, 1), False, lambda x: torch.linalg.vector_norm(x, float("inf"), (0, 1)),
         ord=float("inf"))
    x = torch.tensor([[1.0, -0.5, 0.5, 2], [3, 0.5, -3, 0.5]])
    case("norm_ninf_ties", "norm", x, (1,), True,
         lambda x: torch.linalg.vector_norm(x, float("-inf"), (1,), keepdim=True), ord=float("-inf"))


def main():
    os.makedirs(mf.OUT_DIR, exist_ok=True)
    torch.set_default_dtype(D)
    torch.manual_seed(mf.SEED)
    fx = mf.Fixture("multi")
    fx.meta["generator"] = "bench/torch/make_multi_fixtures.py"
    gen_multi(fx)
    fx.save()


if __name__ == "__main__":
    main()
