#!/usr/bin/python3
"""PyTorch reference fixtures for masked_select and scatter_reduce
(tests/test_fixtures.c, families "masked_select" and "scatter_reduce"). Same
file layout as make_fixtures.py, whose Fixture class writes them. Run by hand
(CI only reads the committed files):

    /usr/bin/python3 bench/torch/make_select_fixtures.py

Masks and index arrays are stored as F64 (exact). A scatter_reduce case's
"reduce" parameter is REDUCES' index (tg_scatter_reduce_mode's order); its
index is int64 when "i64" is 1, else int32.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402

D = mf.D
REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def gen_masked_select(fx):
    r = mf.randn

    def case(name, x, mask):
        fx.case(name, lambda: x.masked_select(mask.bool()), {"x": x}, consts={"mask": mask})

    case("same", r(3, 4), (torch.rand(3, 4) < 0.5).to(D))
    case("mask_row", r(3, 4), torch.tensor([1.0, 0, 1, 1]))       # mask [4] over rows of a [3, 4]
    case("a_row", r(4), (torch.rand(3, 4) < 0.5).to(D))            # a [4] stretched to the mask's [3, 4]
    case("both", r(2, 1, 3), (torch.rand(4, 1) < 0.5).to(D))       # [2, 1, 3] with [4, 1]: [2, 4, 3]
    case("scalar_mask", r(2, 3), torch.tensor(1.0))
    case("none", r(2, 3), torch.zeros(2, 3))


def gen_scatter_reduce(fx):
    r = mf.randn

    def case(name, a, src, ix, dim, reduce, include_self, i64):
        fx.case(name, lambda: a.scatter_reduce(dim, ix, src, reduce, include_self=include_self), {"a": a, "src": src},
                consts={"ix": ix},
                params={"dim": dim, "reduce": REDUCES.index(reduce), "include_self": int(include_self), "i64": i64})

    # OpInfo's sample_inputs_scatter_reduce: a [M, S] with ix and src of its shape along 0 and 1, every reduce,
    # with and without include_self; repeats in ix make positions with several sources and some with none
    M, S = 5, 4
    for k, reduce in enumerate(REDUCES):
        for self_ in (True, False):
            for dim in (0, 1):
                ix = torch.randint(M if dim == 0 else S, (M, S))
                tag = f"{reduce}_{'self' if self_ else 'noself'}_{dim}"
                case(tag, r(M, S), r(M, S), ix, dim, reduce, self_, (k + dim) % 2)
    # 3-D and a negative dim (src has the index's shape: PyTorch 1.13's backward refuses a larger src)
    ix = torch.randint(3, (2, 3, 2))
    for reduce in REDUCES:
        case(f"{reduce}_3d", r(3, 4, 3), r(2, 3, 2), ix, -1, reduce, True, 1)
    # prod with zeros: one zero and two zeros at a position, a zero in a (PyTorch's zero rules)
    a = r(2, 4)
    a[0, 0] = 0
    src = r(2, 5)
    src[0, 1] = 0                       # the only zero sent to [0, 2]
    src[1, 0] = src[1, 3] = 0           # two zeros sent to [1, 1]
    ix = torch.tensor([[0, 2, 2, 3, 0], [1, 0, 2, 1, 3]])
    for self_ in (True, False):
        case(f"prod_zeros_{int(self_)}", a.clone(), src.clone(), ix, 1, "prod", self_, 0)
    # amax / amin with ties: integer values, several equal sources and a equal to them
    a = torch.tensor([[1.0, 2, 3, 2], [0, 0, 1, 1]])
    src = torch.tensor([[2.0, 2, 1, 3, 3], [1, 1, 0, 0, 1]])
    ix = torch.tensor([[1, 1, 0, 2, 2], [3, 2, 0, 0, 3]])
    for reduce in ("amax", "amin"):
        for self_ in (True, False):
            case(f"{reduce}_ties_{int(self_)}", a.clone(), src.clone(), ix, 1, reduce, self_, 1)


def main():
    os.makedirs(mf.OUT_DIR, exist_ok=True)
    torch.set_default_dtype(D)
    for name, gen in (("masked_select", gen_masked_select), ("scatter_reduce", gen_scatter_reduce)):
        torch.manual_seed(mf.SEED)
        fx = mf.Fixture(name)
        fx.meta["generator"] = "bench/torch/make_select_fixtures.py"
        gen(fx)
        fx.save()


if __name__ == "__main__":
    main()
