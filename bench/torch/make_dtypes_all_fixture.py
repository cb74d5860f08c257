"""Writes tests/fixtures/dtypes_all.safetensors: one small tensor of each dtype
PyTorch and tapegrad share (float32, float64, float16, bfloat16, int32,
int64, uint8, bool) with known values, all exact in their dtype, which
tests/test_io_dtype.c lists again and checks value by value and dtype by
dtype after loading.

Run: /usr/bin/python3 bench/torch/make_dtypes_all_fixture.py  (from the repo root)
"""
import os
import sys
from collections import OrderedDict

import torch

sys.path.insert(0, os.path.dirname(__file__))
from st_writer import save_file  # noqa: E402

tensors = OrderedDict()
tensors["f32"] = torch.tensor([[1.5, -2.25], [2.0**-20, 1e30]], dtype=torch.float32)
tensors["f64"] = torch.tensor([0.1, -1 / 3, 2.0**-30], dtype=torch.float64)
tensors["f16"] = torch.tensor([0.5, -65504.0, 2.0**-24], dtype=torch.float16)
tensors["bf16"] = torch.tensor([1.0, -0.0078125, 256.0, 1.5], dtype=torch.bfloat16)
tensors["i32"] = torch.tensor([-(2**31), 0, 7, 2**31 - 1], dtype=torch.int32)
tensors["i64"] = torch.tensor([-(2**63), -1, 2**53 + 1, 2**63 - 1], dtype=torch.int64)
tensors["u8"] = torch.tensor([0, 1, 200, 255], dtype=torch.uint8)
tensors["bool"] = torch.tensor([True, False, True])

out = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "dtypes_all.safetensors")
save_file(tensors, out)
print("wrote", os.path.normpath(out))
