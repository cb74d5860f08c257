#!/usr/bin/python3
"""PyTorch reference fixtures for the shape and indexing ops (tests/test_fixtures.c,
families "shape", "index" and "diagonal"). Same file layout as make_fixtures.py, whose
Fixture class writes them. Run by hand (CI only reads the committed files):

    /usr/bin/python3 bench/torch/make_shape_fixtures.py

Each case's "op" parameter names the tapegrad op (the runner's table order);
list parameters (dims, pads, repeats, shapes) are comma-separated ints.
Index arrays are stored as F64 (exact) and converted by the test, to int64
when the case's "i64" parameter is 1, else int32.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402

D = mf.D
SHAPE_OPS = ["narrow", "slice", "cat", "stack", "flip", "roll", "pad", "repeat", "expand", "tril", "triu", "diag",
             "chunk"]
INDEX_OPS = ["gather", "scatter_add", "index_select", "index_add"]


def ints(v):
    return ",".join(str(int(i)) for i in v)


def gen_shape(fx):
    def case(name, op, inputs, forward, **params):
        fx.case(name, lambda: forward(*inputs.values()), inputs, params={"op": SHAPE_OPS.index(op), **params})

    r = mf.randn
    case("narrow_m1", "narrow", {"x": r(3, 5, 4)}, lambda x: x.narrow(-1, 1, 2), dim=-1, start=1, len=2)
    case("narrow_neg_start", "narrow", {"x": r(5, 3)}, lambda x: x.narrow(0, -3, 2), dim=0, start=-3, len=2)
    case("slice_step", "slice", {"x": r(7, 5, 10)}, lambda x: x[:, :, 1:9:3], dim=2, start=1, end=9, step=3)
    case("slice_clamp", "slice", {"x": r(7, 5)}, lambda x: x[-6:50:2], dim=0, start=-6, end=50, step=2)
    case("cat_1", "cat", {"a": r(2, 3, 4), "b": r(2, 1, 4)}, lambda a, b: torch.cat((a, b), 1), dim=1)
    case("cat_empty", "cat", {"a": r(2, 0, 4), "b": r(2, 2, 4)}, lambda a, b: torch.cat((a, b), -2), dim=-2)
    case("stack_m1", "stack", {"a": r(3, 2), "b": r(3, 2)}, lambda a, b: torch.stack((a, b), -1), dim=-1)
    case("flip_02", "flip", {"x": r(3, 4, 5)}, lambda x: x.flip((0, 2)), dims=ints((0, 2)))
    case("roll_m1", "roll", {"x": r(3, 5)}, lambda x: x.roll(-7, 1), shift=-7, dim=1)
    case("roll_flat", "roll", {"x": r(3, 5)}, lambda x: x.roll(4), shift=4, dim=-(2 ** 31))
    case("pad_crop", "pad", {"x": r(2, 3, 4)}, lambda x: F.pad(x, (1, -2, 0, 3), value=0.5),
         pads=ints((1, -2, 0, 3)), value=0.5)
    case("pad_3d", "pad", {"x": r(2, 3, 4)}, lambda x: F.pad(x, (2, 1, 1, 1, 0, 2)), pads=ints((2, 1, 1, 1, 0, 2)),
         value=0.0)
    case("repeat", "repeat", {"x": r(2, 1, 3)}, lambda x: x.repeat(2, 1, 3, 2), reps=ints((2, 1, 3, 2)))
    case("expand", "expand", {"x": r(3, 1, 2)}, lambda x: x.expand(2, 3, 4, 2), shape=ints((2, 3, 4, 2)))
    case("tril_1", "tril", {"x": r(2, 4, 5)}, lambda x: x.tril(1), k=1)
    case("triu_m1", "triu", {"x": r(5, 3)}, lambda x: x.triu(-1), k=-1)
    case("diag_embed", "diag", {"x": r(4)}, lambda x: torch.diag(x, -2), k=-2)
    case("diag_take", "diag", {"x": r(3, 5)}, lambda x: torch.diag(x, 1), k=1)
    case("chunk_last", "chunk", {"x": r(4, 13)}, lambda x: x.chunk(6, 1)[4], chunks=6, dim=1, piece=4)


def gen_index(fx):
    def case(name, op, inputs, consts, forward, **params):
        fx.case(name, lambda: forward(*inputs.values(), *consts.values()), inputs, consts=consts,
                params={"op": INDEX_OPS.index(op), **params})

    r = mf.randn
    ix = torch.randint(3, (3, 4, 5))
    case("gather_1", "gather", {"x": r(4, 5, 6)}, {"ix": ix}, lambda x, i: x.gather(1, i), dim=1, i64=0)
    case("gather_m1", "gather", {"x": r(4, 5, 6)}, {"ix": ix}, lambda x, i: x.gather(-1, i), dim=-1, i64=1)
    # src has the index's shape: PyTorch 1.13's backward refuses a larger src
    case("scatter_add_0", "scatter_add", {"a": r(4, 5, 6), "src": r(3, 4, 5)}, {"ix": ix},
         lambda a, s, i: a.scatter_add(0, i, s), dim=0, i64=0)
    case("scatter_add_1", "scatter_add", {"a": r(10, 3, 10), "src": r(3, 4, 5)}, {"ix": ix},
         lambda a, s, i: a.scatter_add(1, i, s), dim=1, i64=1)
    sel = torch.tensor([4, 0, 2, 2])
    case("index_select_1", "index_select", {"x": r(3, 5, 2)}, {"ix": sel}, lambda x, i: x.index_select(1, i),
         dim=1, i64=1)
    add = torch.tensor([1, 4, 1])
    case("index_add_0", "index_add", {"a": r(5, 3), "src": r(3, 3)}, {"ix": add},
         lambda a, s, i: a.index_add(0, i, s, alpha=-1.5), dim=0, alpha=-1.5, i64=0)


DIAGONAL_OPS = ["roll_dims", "diagonal", "diag_embed"]


def gen_diagonal(fx):
    def case(name, op, x, forward, **params):
        fx.case(name, lambda: forward(x), {"x": x}, params={"op": DIAGONAL_OPS.index(op), **params})

    r = mf.randn
    case("roll_2", "roll_dims", r(3, 4, 5), lambda x: torch.roll(x, (2, -7), (0, 2)), shifts="2,-7", dims="0,2")
    case("roll_same_dim", "roll_dims", r(4, 5), lambda x: torch.roll(x, (1, 2, -1), (1, -1, 0)), shifts="1,2,-1",
         dims="1,-1,0")
    # OpInfo's sample_inputs_diagonal_diag_embed: offsets 0, 1, -2 and dim pairs (0, 1), (-2, -1), (2, 0)
    for k, (off, d1, d2) in enumerate([(0, -2, -1), (1, 0, 1), (-2, 2, 0), (3, 1, 2), (5, -1, -2)]):
        case(f"diagonal_{k}", "diagonal", r(3, 4, 5), lambda x, o=off, a=d1, b=d2: torch.diagonal(x, o, a, b),
             offset=off, dim1=d1, dim2=d2)
    for k, (shape, off, d1, d2) in enumerate([((2, 3), 0, -2, -1), ((2, 3), 1, 0, 2), ((4,), -2, 0, 1),
                                               ((2, 3, 2), 2, -1, 1)]):
        case(f"diag_embed_{k}", "diag_embed", r(*shape), lambda x, o=off, a=d1, b=d2: torch.diag_embed(x, o, a, b),
             offset=off, dim1=d1, dim2=d2)


def main():
    os.makedirs(mf.OUT_DIR, exist_ok=True)
    torch.set_default_dtype(D)
    for name, gen in (("shape", gen_shape), ("index", gen_index), ("diagonal", gen_diagonal)):
        torch.manual_seed(mf.SEED)
        fx = mf.Fixture(name)
        fx.meta["generator"] = "bench/torch/make_shape_fixtures.py"
        gen(fx)
        fx.save()


if __name__ == "__main__":
    main()
