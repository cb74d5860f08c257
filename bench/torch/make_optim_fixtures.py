#!/usr/bin/python3
"""Reference trajectories of torch.optim for tests/test_optim_torch.c.

Two problems, each optimised for 100 steps by every configuration below,
parameters recorded after every 10 steps:

  quad    f = 0.5 * sum(a * (p - c)^2) over two parameters, w [2,3] and b [3]
  linreg  loss = mean((x @ weight^T + bias - y)^2), x [16,3], y [16,2],
          weight [2,3], bias [2] (nn.Linear(3, 2))

Writes two safetensors files into tests/fixtures/ (or the directory given as
the argument), with Debian's python3-torch:
/usr/bin/python3 bench/torch/make_optim_fixtures.py

  optim_f32.safetensors   the run in float32, every tensor F32
  optim_f64.safetensors   the same run in float64, every tensor F64

Each holds the problem data and initial values (float32 values, identical in
both files), the trajectories traj.<problem>.<config>.<param> [10, *shape]
(row k = parameters after 10*(k+1) steps) and, in "__metadata__", each
configuration's hyperparameters as "config.<name>" (Python reprs, exact as
doubles):
  adam*: "lr beta1 beta2 eps weight_decay adamw no_decay_1d"
  sgd*:  "lr momentum dampening weight_decay nesterov"
no_decay_1d is done in torch with two parameter groups (1-D parameters get
weight_decay 0), which is what tapegrad's option means.

Files are written with bench/torch/st_writer.py (the pip safetensors package
is not needed) and read back to check they hold exactly what was computed.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_writer  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

STEPS, EVERY = 100, 10

CONFIGS = [
    # name, kind, hyperparameters
    ("adam", "adam", dict(lr=0.02, beta1=0.9, beta2=0.999, eps=1e-8, wd=0.0, adamw=0, no1d=0)),
    ("adam_l2", "adam", dict(lr=0.02, beta1=0.8, beta2=0.99, eps=1e-6, wd=0.1, adamw=0, no1d=0)),
    ("adam_eps", "adam", dict(lr=0.02, beta1=0.9, beta2=0.999, eps=0.5, wd=0.0, adamw=0, no1d=0)),
    ("adamw", "adam", dict(lr=0.02, beta1=0.9, beta2=0.999, eps=1e-8, wd=0.1, adamw=1, no1d=0)),
    ("adamw_no1d", "adam", dict(lr=0.02, beta1=0.9, beta2=0.999, eps=1e-8, wd=0.1, adamw=1, no1d=1)),
    ("sgd", "sgd", dict(lr=0.05, momentum=0.0, dampening=0.0, wd=0.0, nesterov=0)),
    ("sgd_momentum", "sgd", dict(lr=0.05, momentum=0.9, dampening=0.0, wd=0.0, nesterov=0)),
    ("sgd_nesterov", "sgd", dict(lr=0.05, momentum=0.9, dampening=0.0, wd=0.0, nesterov=1)),
    ("sgd_dampening", "sgd", dict(lr=0.05, momentum=0.9, dampening=0.3, wd=0.0, nesterov=0)),
    ("sgd_wd", "sgd", dict(lr=0.05, momentum=0.5, dampening=0.0, wd=0.05, nesterov=0)),
]


def config_string(kind, h):
    if kind == "adam":
        vals = [h["lr"], h["beta1"], h["beta2"], h["eps"], h["wd"], h["adamw"], h["no1d"]]
    else:
        vals = [h["lr"], h["momentum"], h["dampening"], h["wd"], h["nesterov"]]
    return " ".join(repr(float(v)) for v in vals)


def make_data():
    """Problem data and initial values, float32 (exact in both files)."""
    g = torch.Generator().manual_seed(5)

    def u(lo, hi, *shape):
        return (lo + (hi - lo) * torch.rand(*shape, generator=g)).float()

    d = {}
    # quad: the minimum c, curvatures a, start 2.5..4 away from c (Adam with
    # lr 0.02 moves at most ~2 in 100 steps: far from the minimum, where the
    # trajectory is insensitive to rounding).
    for name, shape in (("w", (2, 3)), ("b", (3,))):
        d[f"quad.a.{name}"] = u(0.5, 2.0, *shape)
        d[f"quad.c.{name}"] = u(-1.0, 1.0, *shape)
        sign = torch.where(torch.rand(*shape, generator=g) < 0.5, -1.0, 1.0)
        d[f"quad.init.{name}"] = (d[f"quad.c.{name}"] + sign * u(2.5, 4.0, *shape)).float()
    x = u(-1.0, 1.0, 16, 3)
    w_true = torch.tensor([[1.5, -2.0, 0.5], [-1.0, 0.25, 2.0]])
    b_true = torch.tensor([0.3, -0.7])
    y = (x @ w_true.T + b_true + 0.1 * u(-1.0, 1.0, 16, 2)).float()
    d["linreg.x"], d["linreg.y"] = x, y
    d["linreg.init.weight"] = u(-0.5, 0.5, 2, 3)
    d["linreg.init.bias"] = u(-0.5, 0.5, 2)
    return d


def loss_fn(problem, params, d, dtype):
    if problem == "quad":
        return sum(0.5 * (d[f"quad.a.{n}"].to(dtype) * (p - d[f"quad.c.{n}"].to(dtype)) ** 2).sum()
                   for n, p in params.items())
    x, y = d["linreg.x"].to(dtype), d["linreg.y"].to(dtype)
    pred = x @ params["weight"].T + params["bias"]
    return ((pred - y) ** 2).mean()


def make_optimizer(kind, h, params):
    if kind == "sgd":
        return torch.optim.SGD(list(params.values()), lr=h["lr"], momentum=h["momentum"],
                               dampening=h["dampening"], weight_decay=h["wd"],
                               nesterov=bool(h["nesterov"]), foreach=False)
    cls = torch.optim.AdamW if h["adamw"] else torch.optim.Adam
    if h["no1d"]:
        groups = [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": h["wd"]},
                  {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
    else:
        groups = [{"params": list(params.values()), "weight_decay": h["wd"]}]
    return cls(groups, lr=h["lr"], betas=(h["beta1"], h["beta2"]), eps=h["eps"], foreach=False)


def run(problem, kind, h, d, dtype):
    names = ("w", "b") if problem == "quad" else ("weight", "bias")
    params = {n: d[f"{problem}.init.{n}"].to(dtype).clone().requires_grad_(True) for n in names}
    opt = make_optimizer(kind, h, params)
    traj = {n: [] for n in names}
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        loss_fn(problem, params, d, dtype).backward()
        opt.step()
        if step % EVERY == 0:
            for n, p in params.items():
                traj[n].append(p.detach().clone())
    return {n: torch.stack(v) for n, v in traj.items()}


def main():
    torch.set_num_threads(1)
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures")
    os.makedirs(out_dir, exist_ok=True)
    d = make_data()
    meta = {f"config.{name}": config_string(kind, h) for name, kind, h in CONFIGS}
    meta["steps"], meta["every"] = str(STEPS), str(EVERY)
    meta["torch"] = torch.__version__
    for suffix, dtype in (("f32", torch.float32), ("f64", torch.float64)):
        tensors = {k: v.to(dtype) for k, v in d.items()}
        for problem in ("quad", "linreg"):
            for name, kind, h in CONFIGS:
                for n, t in run(problem, kind, h, d, dtype).items():
                    tensors[f"traj.{problem}.{name}.{n}"] = t
        path = os.path.join(out_dir, f"optim_{suffix}.safetensors")
        st_writer.save_checked(tensors, path, meta)
        print(f"wrote {path}: {len(tensors)} tensors")


if __name__ == "__main__":
    main()
