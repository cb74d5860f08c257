#!/usr/bin/python3
"""Reference runs of PyTorch's GradScaler for tests/test_scaler.c.

torch.cuda.amp.GradScaler (1.13) cannot run here: without CUDA it disables
itself, and 1.13 has no CPU kernels for its two ops (calling
torch._amp_update_scale_ or torch._amp_foreach_non_finite_check_and_unscale_
on CPU tensors raises "Could not run ... with arguments from the 'CPU'
backend"; the script checks this and uses them when they do run). So the two
kernels are reproduced from PyTorch's source text on CPU tensors, and driven
with GradScaler's control flow from torch/cuda/amp/grad_scaler.py (1.13):

  scale    loss * scale, scale a float32 tensor of shape (1,)
  unscale  inv_scale = scale.double().reciprocal().float(); found_inf when
           any grad element is not finite (looked at before the multiply);
           grad = grad * inv_scale in the grad's precision, skipped when
           inv_scale == 1 (AmpKernels.cu, _amp_foreach_non_finite_check_and_unscale_)
  step     optimizer.step() only when nothing was found (_maybe_opt_step)
  update   found: scale = float(scale * backoff) (float times double, narrowed),
           tracker = 0; else tracker + 1, and when that equals growth_interval:
           scale = float(scale * growth), tracker = 0 (_amp_update_scale_).
           torch 2.1 added a guard (a growth to Inf is dropped); no run here
           comes near it, so 1.13's rule and 2.1's give the same numbers.

The model is tests/fixtures/optim_*'s linreg problem (its data and initial
values, make_optim_fixtures.make_data): loss = mean((x @ weight^T + bias -
y)^2), weight [2,3], bias [2]. Each configuration runs STEPS steps of

  zero_grad; scaler.scale(loss).backward(); inject; [unscale_; clip_grad_norm_];
  scaler.step(opt); scaler.update()

where inject writes the plan's Inf/NaN into one grad element (plan [STEPS, 3]:
kind 0 none / 1 +Inf / 2 -Inf / 3 NaN, parameter 0 weight / 1 bias, flat
element), first, middle and last elements, in runs that exercise growth
after growth_interval, back-off and repeated back-off.

Writes tests/fixtures/scaler_f32.safetensors and scaler_f64 (the run in that
precision; the scale is a float32 in both, stored as F64), with
/usr/bin/python3 bench/torch/make_scaler_fixtures.py [out_dir]:

  linreg.x, linreg.y, linreg.init.weight, linreg.init.bias   the problem
  plan                                     I64 [STEPS, 3]
  <config>.scale     F64 [STEPS]           the scale after each update
  <config>.tracker   I64 [STEPS]           the growth tracker after it
  <config>.stepped   I64 [STEPS]           1 when optimizer.step ran
  <config>.steps     I64 [STEPS]           the optimizer's step count (Adam's
                                           state['step']; SGD: steps run)
  <config>.weight    [STEPS, 2, 3], <config>.bias [STEPS, 2]   parameters after it
  metadata config.<config> = "kind lr momentum init_scale growth_factor
                              backoff_factor growth_interval max_norm"
           (Python reprs; max_norm 0: no unscale_/clip in the loop)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_writer  # noqa: E402
from make_optim_fixtures import make_data  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# kind, param, element per step (1-based step k is row k-1)
PLAN = [(0, 0, 0), (0, 0, 0), (0, 0, 0), (1, 0, 0), (3, 1, 1), (0, 0, 0), (0, 0, 0), (0, 0, 0),
        (2, 0, 3), (0, 0, 0), (0, 0, 0), (0, 0, 0), (3, 0, 5), (1, 1, 0), (0, 0, 0), (0, 0, 0)]
STEPS = len(PLAN)
VALUES = {1: float("inf"), 2: float("-inf"), 3: float("nan")}

CONFIGS = [
    # name, kind, lr, momentum, init_scale, growth, backoff, interval, max_norm
    ("sgd", "sgd", 0.05, 0.9, 65536.0, 2.0, 0.5, 3, 0.0),
    ("adam", "adam", 0.02, 0.0, 1000.0, 1.1, 0.3, 2, 0.0),
    ("adam_clip", "adam", 0.02, 0.0, 65536.0, 2.0, 0.5, 3, 0.5),
]


def f32(v):
    """A Python float rounded to float32, as a C++ float = double does."""
    return float(torch.tensor(v, dtype=torch.float64).float())


def ops_run_on_cpu():
    try:
        torch._amp_update_scale_(torch.ones(1), torch.zeros(1, dtype=torch.int32), torch.zeros(1), 2.0, 0.5, 1)
        torch._amp_foreach_non_finite_check_and_unscale_([torch.ones(1)], torch.zeros(1), torch.ones(1))
        return True
    except (RuntimeError, NotImplementedError):
        return False


def unscale(grads, scale):
    """found_inf, grads multiplied by float32(1 / double(scale)) in place."""
    inv = scale.double().reciprocal().float()
    if REAL_OPS:
        found = torch.zeros(1)
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
        return bool(found.item())
    found = any(not bool(torch.isfinite(g).all()) for g in grads)
    if inv.item() != 1.0:
        for g in grads:
            g.mul_(inv.to(g.dtype))  # float32, or exactly widened
    return found


def update(scale, tracker, found, growth, backoff, interval):
    """The scale and tracker after one update (torch._amp_update_scale_)."""
    if REAL_OPS:
        s, t = torch.tensor([scale]), torch.tensor([tracker], dtype=torch.int32)
        torch._amp_update_scale_(s, t, torch.tensor([float(found)]), growth, backoff, interval)
        return s.item(), int(t.item())
    if found:
        return f32(scale * backoff), 0
    if tracker + 1 == interval:
        grown = f32(scale * growth)
        return (grown if grown != float("inf") else scale), 0
    return scale, tracker + 1


def run(cfg, d, dtype):
    _, kind, lr, momentum, init_scale, growth, backoff, interval, max_norm = cfg
    params = {n: d[f"linreg.init.{n}"].to(dtype).clone().requires_grad_(True) for n in ("weight", "bias")}
    plist = list(params.values())
    if kind == "sgd":
        opt = torch.optim.SGD(plist, lr=lr, momentum=momentum, foreach=False)
    else:
        opt = torch.optim.Adam(plist, lr=lr, foreach=False)
    x, y = d["linreg.x"].to(dtype), d["linreg.y"].to(dtype)
    scale, tracker, steps = f32(init_scale), 0, 0
    out = {k: [] for k in ("scale", "tracker", "stepped", "steps", "weight", "bias")}
    for k, (what, which, elem) in enumerate(PLAN):
        opt.zero_grad()
        loss = ((x @ params["weight"].T + params["bias"] - y) ** 2).mean()
        (loss * torch.tensor([scale], dtype=torch.float32)).sum().backward()
        if what:
            with torch.no_grad():
                plist[which].grad.view(-1)[elem] = VALUES[what]
        found = unscale([p.grad for p in plist], torch.tensor([scale], dtype=torch.float32))
        if max_norm:
            torch.nn.utils.clip_grad_norm_(plist, max_norm)
        if not found:
            opt.step()
            steps += 1
        scale, tracker = update(scale, tracker, found, growth, backoff, interval)
        out["scale"].append(scale)
        out["tracker"].append(tracker)
        out["stepped"].append(int(not found))
        out["steps"].append(int(opt.state[plist[0]]["step"]) if kind == "adam" and opt.state else steps)
        for n, p in params.items():
            out[n].append(p.detach().clone())
        assert kind == "sgd" or steps == out["steps"][-1], (cfg, k)
    name = cfg[0]
    return {f"{name}.scale": torch.tensor(out["scale"], dtype=torch.float64),
            f"{name}.tracker": torch.tensor(out["tracker"], dtype=torch.int64),
            f"{name}.stepped": torch.tensor(out["stepped"], dtype=torch.int64),
            f"{name}.steps": torch.tensor(out["steps"], dtype=torch.int64),
            f"{name}.weight": torch.stack(out["weight"]), f"{name}.bias": torch.stack(out["bias"])}


REAL_OPS = ops_run_on_cpu()


def main():
    torch.set_num_threads(1)
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures")
    os.makedirs(out_dir, exist_ok=True)
    d = {k: v for k, v in make_data().items() if k.startswith("linreg.")}
    meta = {f"config.{c[0]}": " ".join(repr(v) if isinstance(v, float) else str(v) for v in c[1:])
            for c in CONFIGS}
    meta["steps"] = str(STEPS)
    meta["torch"] = torch.__version__
    meta["rule"] = "torch's CPU ops" if REAL_OPS else "reproduced from AmpKernels.cu (no CPU ops in this torch)"
    for suffix, dtype in (("f32", torch.float32), ("f64", torch.float64)):
        tensors = {k: v.to(dtype) for k, v in d.items()}
        tensors["plan"] = torch.tensor(PLAN, dtype=torch.int64)
        for cfg in CONFIGS:
            tensors.update(run(cfg, d, dtype))
        path = os.path.join(out_dir, f"scaler_{suffix}.safetensors")
        st_writer.save_checked(tensors, path, meta)
        print(f"wrote {path}: {len(tensors)} tensors ({meta['rule']})")


if __name__ == "__main__":
    main()
