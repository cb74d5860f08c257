#!/usr/bin/python3
"""PyTorch reference fixtures for the convolution and pooling ops
(tests/test_conv.c). Same file layout as make_fixtures.py, whose Fixture class
writes them. Run by hand (CI only reads the committed file):

    /usr/bin/python3 bench/torch/make_conv_fixtures.py

Writes tests/fixtures/conv.safetensors. Each case's "op" parameter names the
tapegrad op (an index into OPS); the pairs (stride, padding, dilation, kernel,
output_padding) are "h,w" strings ("l" for 1-D ops), the flags 0/1. The
conv2d shapes are PyTorch's OpInfo samples (sample_inputs_conv2d in
torch/testing/_internal/common_methods_invocations.py), the pooling ones
follow its max_pool / avg_pool generators.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402

D = mf.D
OPS = ["conv2d", "max_pool2d", "conv1d", "max_pool1d", "avg_pool2d", "avg_pool1d", "adaptive_avg_pool2d",
       "conv_transpose2d", "interpolate", "batch_norm", "max_pool2d_indices", "max_unpool2d", "max_pool1d_indices"]


def pair(v, nd=2):
    v = (v,) * nd if isinstance(v, int) else tuple(v)
    return ",".join("-1" if i is None else str(int(i)) for i in v)  # None: TG_SIZE_NONE


def r(*shape):
    return torch.rand(*shape, dtype=D) * 2 - 1  # make_tensor's low=-1, high=1


def gen(fx):
    def case(name, op, inputs, forward, **params):
        fx.case(name, lambda: forward(*inputs.values()), inputs, params={"op": OPS.index(op), **params})

    # conv2d: (input, weight, bias or None, kwargs), OpInfo's samples
    convs = [
        ("basic", (1, 3, 4, 4), (3, 3, 3, 3), 3, dict(stride=(2, 2), padding=2)),
        ("dil_groups", (2, 4, 8, 8), (2, 2, 3, 3), 2, dict(stride=(3, 2), padding=(2, 1), groups=2, dilation=(4, 4))),
        ("dil", (1, 4, 5, 5), (1, 4, 2, 3), 1, dict(stride=2, padding=1, dilation=(2, 3))),
        ("nobias", (1, 2, 4, 3), (4, 2, 3, 4), None, dict(stride=2, padding=1)),
        ("valid", (1, 4, 5, 5), (1, 4, 2, 3), 1, dict(stride=2, padding="valid")),
        ("same", (1, 4, 5, 5), (1, 4, 2, 3), 1, dict(padding="same", dilation=3)),
        ("same_even", (2, 3, 6, 7), (2, 3, 4, 2), 2, dict(padding="same")),
        ("depthwise", (2, 4, 6, 6), (4, 1, 3, 3), 4, dict(groups=4)),
        ("depthwise_x2", (2, 4, 6, 6), (8, 1, 3, 3), 8, dict(groups=4)),
        ("depthwise_stride", (2, 4, 6, 6), (4, 1, 3, 3), 4, dict(groups=4, stride=(3, 2))),
        ("groups2", (2, 4, 6, 5), (6, 2, 3, 2), 6, dict(groups=2)),
        ("defaults", (1, 4, 5, 5), (3, 4, 3, 3), None, dict()),
        ("one_by_one", (2, 5, 3, 4), (3, 5, 1, 1), 3, dict()),
        ("unbatched", (3, 6, 5), (2, 3, 3, 3), 2, dict(padding=1)),
        ("opinfo_functorch", (2, 6, 7, 5), (4, 6, 3, 2), 4, dict()),
    ]
    for name, xs, ws, bs, kw in convs:
        inputs = {"x": r(*xs), "weight": r(*ws)}  # "w" is the fixture's output weighting
        if bs:
            inputs["bias"] = r(bs)
        pad = kw.get("padding", 0)
        case("conv2d_" + name, "conv2d", inputs,
             lambda x, w, b=None, kw=kw: F.conv2d(x, w, b, **kw),
             stride=pair(kw.get("stride", 1)), padding=pair(0 if isinstance(pad, str) else pad),
             dilation=pair(kw.get("dilation", 1)), groups=kw.get("groups", 1), same=int(pad == "same"))

    # max_pool2d: (input, kwargs)
    pools = [
        ("k3", (1, 2, 7, 7), dict(kernel_size=3)),
        ("k32_s1", (2, 3, 6, 7), dict(kernel_size=(3, 2), stride=1)),
        ("pad_ceil", (1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
        ("dil", (2, 1, 8, 9), dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0), dilation=(1, 2))),
        ("ceil_dil", (1, 2, 9, 8), dict(kernel_size=2, stride=2, padding=1, dilation=2, ceil_mode=True)),
        ("unbatched", (3, 5, 6), dict(kernel_size=2)),
    ]
    for name, xs, kw in pools:
        k = kw["kernel_size"]
        case("max_pool2d_" + name, "max_pool2d", {"x": r(*xs)}, lambda x, kw=kw: F.max_pool2d(x, **kw),
             kernel=pair(k), stride=pair(kw.get("stride", 0)), padding=pair(kw.get("padding", 0)),
             dilation=pair(kw.get("dilation", 1)), ceil_mode=int(kw.get("ceil_mode", False)))
    # ties: small integers, so windows share their maximum (the first one takes the grad)
    ties = torch.randint(0, 3, (2, 2, 6, 6)).to(D)
    case("max_pool2d_ties", "max_pool2d", {"x": ties}, lambda x: F.max_pool2d(x, 3, 1, 1),
         kernel=pair(3), stride=pair(1), padding=pair(1), dilation=pair(1), ceil_mode=0)

    # conv1d: OpInfo's sample_inputs_conv1d
    conv1ds = [
        ("basic", (1, 3, 4), (3, 3, 3), 3, dict(stride=2, padding=2)),
        ("dil_groups", (2, 4, 8), (2, 2, 3), 2, dict(stride=3, padding=1, groups=2, dilation=2)),
        ("dil", (1, 4, 5), (1, 4, 3), None, dict(stride=2, padding=3, dilation=2)),
        ("same", (1, 4, 5), (1, 4, 3), 1, dict(padding="same", dilation=2)),
        ("same_even", (2, 2, 7), (3, 2, 4), 3, dict(padding="same")),
        ("unbatched", (4, 6), (2, 4, 2), 2, dict()),
    ]
    for name, xs, ws, bs, kw in conv1ds:
        inputs = {"x": r(*xs), "weight": r(*ws)}
        if bs:
            inputs["bias"] = r(bs)
        pad = kw.get("padding", 0)
        case("conv1d_" + name, "conv1d", inputs, lambda x, w, b=None, kw=kw: F.conv1d(x, w, b, **kw),
             stride=pair(kw.get("stride", 1), 1), padding=pair(0 if isinstance(pad, str) else pad, 1),
             dilation=pair(kw.get("dilation", 1), 1), groups=kw.get("groups", 1), same=int(pad == "same"))

    # conv_transpose2d: OpInfo's sample_inputs_conv_transpose2d
    transposes = [
        ("basic", (1, 3, 4, 4), (3, 3, 3, 3), 3, dict(stride=2, padding=2, output_padding=(1, 1))),
        ("groups_dil", (2, 2, 4, 4), (2, 2, 4, 5), 4,
         dict(stride=(3, 2), padding=(1, 2), output_padding=(2, 3), groups=2, dilation=(4, 4))),
        ("dil", (1, 1, 4, 5), (1, 1, 4, 3), 1, dict(stride=2, padding=1, output_padding=1, dilation=(2, 3))),
        ("nobias", (1, 4, 5, 5), (4, 8, 3, 3), None, dict()),
        ("one_by_one", (2, 3, 3, 4), (3, 2, 1, 1), 2, dict()),
        ("unbatched", (3, 4, 4), (3, 2, 2, 3), 2, dict(stride=2)),
    ]
    for name, xs, ws, bs, kw in transposes:
        inputs = {"x": r(*xs), "weight": r(*ws)}
        if bs:
            inputs["bias"] = r(bs)
        case("conv_transpose2d_" + name, "conv_transpose2d", inputs,
             lambda x, w, b=None, kw=kw: F.conv_transpose2d(x, w, b, **kw),
             stride=pair(kw.get("stride", 1)), padding=pair(kw.get("padding", 0)),
             dilation=pair(kw.get("dilation", 1)), groups=kw.get("groups", 1),
             output_padding=pair(kw.get("output_padding", 0)))

    # max_pool1d
    for name, xs, kw in [("k3", (2, 3, 9), dict(kernel_size=3)),
                         ("pad_dil_ceil", (1, 2, 10), dict(kernel_size=3, stride=2, padding=1, dilation=2,
                                                           ceil_mode=True)),
                         ("unbatched", (3, 7), dict(kernel_size=2, stride=1))]:
        case("max_pool1d_" + name, "max_pool1d", {"x": r(*xs)}, lambda x, kw=kw: F.max_pool1d(x, **kw),
             kernel=pair(kw["kernel_size"], 1), stride=pair(kw.get("stride", 0), 1),
             padding=pair(kw.get("padding", 0), 1), dilation=pair(kw.get("dilation", 1), 1),
             ceil_mode=int(kw.get("ceil_mode", False)))

    # avg_pool2d / avg_pool1d: OpInfo's sample_inputs_avgpool2d / avgpool1d
    avgs = [
        ("k3", (1, 2, 7, 7), dict(kernel_size=3)),
        ("k32_s12_p1", (2, 3, 6, 7), dict(kernel_size=(3, 2), stride=(1, 2), padding=1)),
        ("ceil_nopad", (1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                         count_include_pad=False)),
        ("ceil_pad", (1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
        ("unbatched", (3, 5, 6), dict(kernel_size=2, padding=1, count_include_pad=False)),
    ]
    for name, xs, kw in avgs:
        case("avg_pool2d_" + name, "avg_pool2d", {"x": r(*xs)}, lambda x, kw=kw: F.avg_pool2d(x, **kw),
             kernel=pair(kw["kernel_size"]), stride=pair(kw.get("stride", 0)), padding=pair(kw.get("padding", 0)),
             ceil_mode=int(kw.get("ceil_mode", False)), count_include_pad=int(kw.get("count_include_pad", True)))
    avg1s = [
        ("k3", (2, 3, 9), dict(kernel_size=3)),
        ("ceil_nopad", (1, 2, 10), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
        ("ceil_pad", (1, 2, 10), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    ]
    for name, xs, kw in avg1s:
        case("avg_pool1d_" + name, "avg_pool1d", {"x": r(*xs)}, lambda x, kw=kw: F.avg_pool1d(x, **kw),
             kernel=pair(kw["kernel_size"], 1), stride=pair(kw.get("stride", 0), 1),
             padding=pair(kw.get("padding", 0), 1), ceil_mode=int(kw.get("ceil_mode", False)),
             count_include_pad=int(kw.get("count_include_pad", True)))

    # adaptive_avg_pool2d: OpInfo's sample_inputs_adaptive_avg_pool2d
    for name, xs, size in [("to_3x3", (1, 3, 10, 8), (3, 3)), ("up_to_7x6", (1, 2, 4, 5), (7, 6)),
                           ("to_1x1", (2, 3, 5, 5), (1, 1)), ("unbatched", (3, 9, 7), (4, 3))]:
        case("adaptive_avg_pool2d_" + name, "adaptive_avg_pool2d", {"x": r(*xs)},
             lambda x, size=size: F.adaptive_avg_pool2d(x, size), size=pair(size))


    # batch_norm: training moves the running statistics (kept as "running_mean_after" ...)
    bns = [
        ("train_4d", (4, 3, 5, 6), True, True, 0.1, 1e-5),
        ("train_2d_noaffine", (6, 4), True, False, 0.3, 1e-3),
        ("train_3d_mom1", (3, 2, 7), True, True, 1.0, 1e-5),
        ("eval_4d", (2, 3, 4, 4), False, True, 0.1, 1e-5),
        ("eval_noaffine", (2, 3, 5), False, False, 0.1, 1e-2),
    ]
    for name, xs, training, affine, momentum, eps in bns:
        C = xs[1]
        rm0, rv0 = r(C) * 0.5, torch.rand(C, dtype=D) + 0.5
        rm, rv = rm0.clone(), rv0.clone()
        inputs = {"x": r(*xs) * 2 + 0.5}
        if affine:
            inputs["weight"], inputs["bias"] = r(C) + 1, r(C)
        case("batch_norm_" + name, "batch_norm", inputs,
             lambda x, w=None, b=None, rm=rm, rv=rv, training=training, momentum=momentum, eps=eps:
             F.batch_norm(x, rm, rv, w, b, training, momentum, eps),
             training=int(training), momentum=momentum, eps=eps)
        cn = "batch_norm_" + name
        fx.tensors[cn + ".running_mean"], fx.tensors[cn + ".running_var"] = rm0, rv0
        fx.tensors[cn + ".running_mean_after"], fx.tensors[cn + ".running_var_after"] = rm, rv

    # interpolate: nearest and bilinear, by size and by scale
    interps = [
        ("nearest_size", (1, 2, 4, 5), dict(size=(7, 3), mode="nearest")),
        ("nearest_scale", (2, 1, 3, 4), dict(scale_factor=(2.0, 1.5), mode="nearest")),
        ("nearest_down", (1, 2, 9, 7), dict(size=(4, 3), mode="nearest")),
        ("bilinear_size", (1, 2, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=False)),
        ("bilinear_align", (2, 2, 4, 5), dict(size=(7, 9), mode="bilinear", align_corners=True)),
        ("bilinear_scale", (1, 3, 5, 4), dict(scale_factor=(1.7, 0.6), mode="bilinear", align_corners=False)),
        ("bilinear_align_1", (1, 1, 4, 5), dict(size=(1, 6), mode="bilinear", align_corners=True)),
        ("scale2", (2, 3, 4, 4), dict(scale_factor=2.0, mode="bilinear", align_corners=False)),
    ]
    for name, xs, kw in interps:
        size = kw.get("size", (0, 0))
        sf = kw.get("scale_factor", (0.0, 0.0))
        sf = (sf, sf) if isinstance(sf, float) else sf
        case("interpolate_" + name, "interpolate", {"x": r(*xs)}, lambda x, kw=kw: F.interpolate(x, **kw),
             size=pair(size),
             scale_h=float(sf[0]), scale_w=float(sf[1]), bilinear=int(kw["mode"] == "bilinear"),
             align_corners=int(kw.get("align_corners", False)))


def gen_options(fx):
    """The options added after the cases above (appended, so their draws stay
    the same): avg_pool2d's divisor_override, adaptive pooling's None,
    return_indices (the indices kept as "<case>.indices", float) and
    max_unpool2d of max_pool2d's output and indices."""
    def case(name, op, inputs, forward, **params):
        fx.case(name, lambda: forward(*inputs.values()), inputs, params={"op": OPS.index(op), **params})

    divs = [
        ("div_k3", (1, 2, 7, 7), dict(kernel_size=3, divisor_override=4)),
        ("div_ceil_nopad", (2, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                             count_include_pad=False, divisor_override=2)),
        ("div_unbatched", (3, 5, 6), dict(kernel_size=(2, 3), padding=1, divisor_override=7)),
    ]
    for name, xs, kw in divs:
        case("avg_pool2d_" + name, "avg_pool2d", {"x": r(*xs)}, lambda x, kw=kw: F.avg_pool2d(x, **kw),
             kernel=pair(kw["kernel_size"]), stride=pair(kw.get("stride", 0)), padding=pair(kw.get("padding", 0)),
             ceil_mode=int(kw.get("ceil_mode", False)), count_include_pad=int(kw.get("count_include_pad", True)),
             divisor_override=kw["divisor_override"])
    for name, xs, size in [("none_h", (1, 3, 6, 8), (None, 3)), ("none_w", (2, 2, 5, 7), (2, None)),
                           ("none_both", (3, 4, 5), (None, None))]:
        case("adaptive_avg_pool2d_" + name, "adaptive_avg_pool2d", {"x": r(*xs)},
             lambda x, size=size: F.adaptive_avg_pool2d(x, size), size=pair(size))

    def with_indices(name, op, fn, x, kw, nd):
        ix = fn(x, return_indices=True, **kw)[1]
        case(name, op, {"x": x}, lambda x, kw=kw: fn(x, **kw),
             kernel=pair(kw["kernel_size"], nd), stride=pair(kw.get("stride", 0), nd),
             padding=pair(kw.get("padding", 0), nd), dilation=pair(kw.get("dilation", 1), nd),
             ceil_mode=int(kw.get("ceil_mode", False)))
        fx.tensors[name + ".indices"] = ix.to(D)

    for name, xs, kw in [("k3", (1, 2, 7, 7), dict(kernel_size=3)),
                         ("pad_ceil_dil", (2, 2, 9, 8), dict(kernel_size=(3, 2), stride=2, padding=1, dilation=(1, 2),
                                                             ceil_mode=True)),
                         ("unbatched", (3, 5, 6), dict(kernel_size=2, stride=1))]:
        with_indices("max_pool2d_indices_" + name, "max_pool2d_indices", F.max_pool2d, r(*xs), kw, 2)
    for name, xs, kw in [("k3", (2, 3, 9), dict(kernel_size=3)),
                         ("pad_dil_ceil", (1, 2, 10), dict(kernel_size=3, stride=2, padding=1, dilation=2,
                                                           ceil_mode=True))]:
        with_indices("max_pool1d_indices_" + name, "max_pool1d_indices", F.max_pool1d, r(*xs), kw, 1)

    # max_unpool2d(max_pool2d(x, return_indices=True)): the grad goes to each window's maximum
    unpools = [
        ("k2", (2, 3, 6, 8), dict(kernel_size=2), None),
        ("k3_s2_p1", (1, 2, 7, 7), dict(kernel_size=3, stride=2, padding=1), None),
        ("size", (1, 2, 5, 7), dict(kernel_size=2), (5, 7)),
        ("unbatched", (3, 6, 4), dict(kernel_size=(3, 2), stride=(3, 2)), None),
    ]
    for name, xs, kw, size in unpools:
        case("max_unpool2d_" + name, "max_unpool2d", {"x": r(*xs)},
             lambda x, kw=kw, size=size: F.max_unpool2d(*F.max_pool2d(x, return_indices=True, **kw),
                                                         output_size=size, **kw),
             kernel=pair(kw["kernel_size"]), stride=pair(kw.get("stride", 0)), padding=pair(kw.get("padding", 0)),
             size=pair(size or (0, 0)))


def main():
    os.makedirs(mf.OUT_DIR, exist_ok=True)
    torch.set_default_dtype(D)
    torch.manual_seed(mf.SEED)
    fx = mf.Fixture("conv")
    fx.meta["generator"] = "bench/torch/make_conv_fixtures.py"
    gen(fx)
    gen_options(fx)
    fx.save()


if __name__ == "__main__":
    main()
