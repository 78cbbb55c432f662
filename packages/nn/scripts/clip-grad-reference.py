"""Expected values for packages/nn/src/optim/clip-grad.test.ts.

Runs torch.nn.utils.clip_grad_norm_ / clip_grad_value_ on fixed gradients and prints the results
as JSON; the test embeds that output. Run with a Python that has torch:
    python3 packages/nn/scripts/clip-grad-reference.py
"""
import json
import math

import torch

GRADS = [
    [[0.5, -1.25, 2.0], [0.75, -0.125, 3.5]],
    [-4.0, 0.25, 1.5, -0.0625],
    None,  # a parameter without a gradient: skipped
    [2.25],
]
CASES = [
    {"name": "l2 clips", "maxNorm": 1.0, "normType": 2.0},
    {"name": "l2 below the limit", "maxNorm": 100.0, "normType": 2.0},
    {"name": "inf norm", "maxNorm": 0.5, "normType": math.inf},
    {"name": "l1", "maxNorm": 2.0, "normType": 1.0},
    {"name": "p = 3", "maxNorm": 0.7, "normType": 3.0},
    {"name": "p = 0.5", "maxNorm": 10.0, "normType": 0.5},
]


def params():
    out = []
    for g in GRADS:
        if g is None:
            out.append(torch.zeros(2, requires_grad=True))
            continue
        p = torch.zeros(torch.tensor(g).shape, requires_grad=True)
        p.grad = torch.tensor(g, dtype=torch.float32)
        out.append(p)
    return out


def grads(ps):
    return [None if p.grad is None else p.grad.flatten().tolist() for p in ps]


def enc(x):
    return x if math.isfinite(x) else str(x)


result = {"grads": GRADS, "norm": [], "value": []}
for c in CASES:
    ps = params()
    total = torch.nn.utils.clip_grad_norm_(ps, c["maxNorm"], c["normType"])
    result["norm"].append({**c, "normType": enc(c["normType"]), "total": total.item(), "grads": grads(ps)})
for clip in [0.3, 1.0, 5.0]:
    ps = params()
    torch.nn.utils.clip_grad_value_(ps, clip)
    result["value"].append({"clipValue": clip, "grads": grads(ps)})
# nonfinite totals without errorIfNonfinite: PyTorch still scales (by 0 for an infinite total, NaN for a NaN one)
for bad in [math.inf, math.nan]:
    p = torch.zeros(3, requires_grad=True)
    p.grad = torch.tensor([1.0, bad, -2.0])
    q = torch.zeros(1, requires_grad=True)
    q.grad = torch.tensor([3.0])
    total = torch.nn.utils.clip_grad_norm_([p, q], 1.0)
    result.setdefault("nonfinite", []).append({"bad": enc(bad), "total": enc(total.item()), "grads": [[enc(v) for v in g] for g in grads([p, q])]})
    try:
        torch.nn.utils.clip_grad_norm_([p, q], 1.0, error_if_nonfinite=True)
        result["nonfinite"][-1]["raises"] = False
    except RuntimeError:
        result["nonfinite"][-1]["raises"] = True
for key in ["norm", "value", "nonfinite"]:
    print(key)
    for r in result[key]:
        print("  " + json.dumps(r) + ",")
