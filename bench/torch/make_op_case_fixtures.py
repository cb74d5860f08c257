#!/usr/bin/python3
"""PyTorch's output and input grads for every op-case row with a twin
(tests/op_cases_torch.c), into tests/fixtures/op_cases_torch.safetensors,
which op_cases/same_as_pytorch of tests/test_op_cases.c compares with. Run by
hand after adding or changing a row or its twin (CI only reads the committed
file):

    /usr/bin/python3 bench/torch/make_op_case_fixtures.py [BUILD_DIR]

BUILD_DIR (default build/release) holds a built tests/test_op_cases_f64: it
is run with TG_OP_CASES_EXPORT set, which writes each twinned row's inputs
(the values the row's checks use, float64) as "<row>/in<k>" and its
expression and which inputs take a grad as metadata. Each expression is
evaluated over x = those inputs in float64, then backward from the upstream
grad below; the file gets "<row>/in<k>", "<row>/out" and "<row>/grad<k>" for
each input that takes a grad (zeros where the output does not reach it).
Integer and bool outputs keep their dtype (compared exactly).
"""
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_writer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "op_cases_torch.safetensors")

# OC_UPSTREAM of tests/op_cases_torch.h
UPSTREAM_TEXT = "((i % 7) - 3) / 4 at flat index i of the output"


def upstream(y):
    i = torch.arange(y.numel(), dtype=torch.int64)
    return ((i % 7 - 3).to(torch.float64) / 4).reshape(y.shape).to(y.dtype)


def export(build):
    exe = os.path.join(build, "tests", "test_op_cases_f64")
    if not os.access(exe, os.X_OK):
        sys.exit(f"{exe}: not built (cmake --build {build} -j2)")
    fd, path = tempfile.mkstemp(suffix=".safetensors")
    os.close(fd)
    env = dict(os.environ, TG_OP_CASES_EXPORT=path)
    subprocess.run([exe, "--filter", "op_cases/torch_export"], env=env, check=True)
    tensors, meta = st_writer.load_file(path)
    os.unlink(path)
    return tensors, meta


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "release")
    tensors, meta = export(build)
    if meta.get("upstream") != UPSTREAM_TEXT:
        sys.exit(f"the export's upstream rule {meta.get('upstream')!r} is not {UPSTREAM_TEXT!r}")
    out, out_meta = {}, {"upstream": UPSTREAM_TEXT}
    rows = sorted(k[: -len("/torch")] for k in meta if k.endswith("/torch"))
    for row in rows:
        expr, grads = meta[row + "/torch"], meta[row + "/grads"]
        x = []
        for k, g in enumerate(grads):
            t = tensors[f"{row}/in{k}"].clone()
            out[f"{row}/in{k}"] = t.clone()
            x.append(t.requires_grad_(g == "1"))
        try:
            y = eval(expr, {"torch": torch, "F": F, "x": x})
        except Exception as e:
            sys.exit(f"{row}: {expr}: {e}")
        out[f"{row}/out"] = y.detach().clone()
        out_meta[row + "/torch"] = expr
        wrt = [k for k, g in enumerate(grads) if g == "1"]
        if y.requires_grad and wrt:
            gs = torch.autograd.grad(y, [x[k] for k in wrt], upstream(y), allow_unused=True)
            for k, g in zip(wrt, gs):
                out[f"{row}/grad{k}"] = torch.zeros_like(x[k]) if g is None else g.detach().clone()
    st_writer.save_file(out, OUT, out_meta)
    print(f"{OUT}: {len(rows)} rows")


if __name__ == "__main__":
    main()
