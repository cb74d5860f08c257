"""Writes tests/fixtures/dtypes.safetensors: one tensor of each dtype tapegrad
reads besides F32/F64 (F16, BF16, I32, I64, U8, BOOL), the edge values of
each, and PyTorch's own conversion of each to float64 ("<name>.f64") and,
for the integer ones, to int64 ("<name>.i64"), which tests/test_io_dtype.c
compares tapegrad's loading with. Also a BatchNorm1d state_dict in half
precision ("bn.*", with its I64 num_batches_tracked), the kind of file that
used to be refused whole. And float32 values with PyTorch's rounding of them
to F16 and BF16 ("w_src", "w_src.f16", "w_src.bf16"), for writing.

Run: /usr/bin/python3 bench/torch/make_dtype_fixtures.py  (from the repo root)
"""
import os
import sys
from collections import OrderedDict

import torch

sys.path.insert(0, os.path.dirname(__file__))
from st_writer import save_file  # noqa: E402

torch.manual_seed(0)
f = [0.0, -0.0, 1.0, -2.5, 1 / 3, 65504.0, 2.0**-24, 2.0**-14, 1e-3, float("inf"), float("-inf"), 3.14159]
tensors = OrderedDict()
tensors["f16"] = torch.tensor(f).to(torch.float16).reshape(3, 4)
tensors["bf16"] = torch.cat([torch.tensor(f), torch.tensor([3e38, 1e-40])]).to(torch.bfloat16)
tensors["f16_rand"] = torch.randn(2, 3, 5).to(torch.float16)
tensors["bf16_rand"] = torch.randn(7, 2).to(torch.bfloat16)
tensors["i32"] = torch.tensor([-(2**31), -1, 0, 1, 2**31 - 1, 123456], dtype=torch.int32).reshape(2, 3)
tensors["i64"] = torch.tensor([-(2**63), -1, 0, 2**53 + 1, 2**63 - 1, 16777217], dtype=torch.int64)
tensors["u8"] = torch.tensor([0, 1, 127, 128, 255], dtype=torch.uint8)
tensors["bool"] = torch.tensor([[True, False], [False, True]])
tensors["ids"] = torch.randint(0, 50000, (4, 6), dtype=torch.int64)
for name in list(tensors):
    t = tensors[name]
    tensors[name + ".f64"] = t.to(torch.float64)
    if not t.is_floating_point():
        tensors[name + ".i64"] = t.to(torch.int64)

# Rounding to F16 / BF16 (what tg_st_save writes): float32 sources, among them
# ties that round to even, values that overflow to infinity and subnormals,
# and PyTorch's rounding of each.
ties = [2 - 2**-12, 65535.0, 1 + 2**-11, 1 + 3 * 2**-11, 65519.0, 65520.0, 2**-25, 3 * 2**-25, 2**-14 - 2**-26, 1e-8, -0.0,
        1 + 2**-8, 1 + 3 * 2**-8, 3.4028234663852886e38, -3.4e38, 1e-39, 9.2e-41]
src = torch.cat([torch.tensor(ties, dtype=torch.float32), torch.randn(40) * 10, torch.randn(40) * 1e-6,
                 torch.randn(20) * 1e-39])
tensors["w_src"] = src
tensors["w_src.f16"] = src.to(torch.float16)
tensors["w_src.bf16"] = src.to(torch.bfloat16)

bn = torch.nn.BatchNorm1d(3)
with torch.no_grad():
    bn.weight.copy_(torch.randn(3))
    bn.bias.copy_(torch.randn(3))
bn(torch.randn(8, 3))  # a training step: running stats and num_batches_tracked move
for name, t in bn.half().state_dict().items():
    tensors["bn." + name] = t
    tensors["bn." + name + ".f64"] = t.to(torch.float64)

out = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "dtypes.safetensors")
save_file(tensors, out, metadata={"made_by": "bench/torch/make_dtype_fixtures.py", "torch": torch.__version__})
print("wrote", os.path.normpath(out), len(tensors), "tensors")
