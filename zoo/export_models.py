"""Builds the model zoo's PyTorch corpus: real architectures with random weights, exported to ONNX.

Run by `pnpm zoo` with /usr/bin/python3 (python3-torch 1.13, python3-torchvision 0.14). For each model it writes,
under CACHE/<name>/ (skipping what is already there):

  <name>-op11.onnx, -op13.onnx, -op17.onnx   the model exported by torch.onnx (free batch dim 'N', input 'input')
  calib/x.npy                                the calibration / evaluation samples, [S, ...] float32, seeded
  model.json                                 what the runner reads: family, input shape, files or the export error
                                             per opset, and PyTorch FX's int8 PTQ SQNR (fbgemm or onednn, default qconfig)
                                             of each output against float on the samples, or why FX cannot

Usage: export_models.py CACHE [--only NAME[,NAME]] [--samples S] [--list]
"""

import json
import os
import sys
import traceback

try:
    import numpy as np
    import torch
    import torchvision
    from torch import nn
except ImportError as e:  # the runner checks first; this is for a direct call
    sys.exit(f"export_models.py needs PyTorch and torchvision (python3-torch, python3-torchvision): {e}")

from zoo_models import MODELS  # noqa: E402  (the architectures, beside this file)

OPSETS = (11, 13, 17)


def settle_batch_norm(net, shape, seed):
    """BN running statistics from random data, so a random-weight network's activations stay in range."""
    g = torch.Generator().manual_seed(seed)
    net.train()
    with torch.no_grad():
        for _ in range(4):
            net(torch.randn(*([4] + shape[1:]), generator=g))
    net.eval()


def samples(entry, count, seed):
    """Seeded samples: images as random pixels normalised with ImageNet's mean/std, anything else N(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    shape = [count] + entry["shape"][1:]
    if entry.get("image"):
        pixels = torch.rand(*shape, generator=g)
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        return (pixels - mean) / std
    return torch.randn(*shape, generator=g)


def outputs_of(y):
    if isinstance(y, torch.Tensor):
        return [y]
    if isinstance(y, dict):
        return list(y.values())
    return list(y)


def sqnr_db(ref, y):
    noise = float(((ref - y) ** 2).sum())
    signal = float((ref**2).sum())
    return None if noise == 0 else 10 * np.log10(signal / noise)


def fx_ptq(net, x):
    """PyTorch FX int8 PTQ (default qconfig mapping) calibrated on x: SQNR per output, or the reason.

    Debian's python3-torch is built without FBGEMM; its x86 engine is onednn, whose default qconfig is fbgemm's
    (histogram observer for activations, per-channel min/max for weights, reduce_range off), as
    bench/torchvision-models.py uses it."""
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    engine = "fbgemm" if "fbgemm" in torch.backends.quantized.supported_engines else "onednn"
    torch.backends.quantized.engine = engine
    try:
        import copy

        model = copy.deepcopy(net).eval()
        prepared = prepare_fx(model, get_default_qconfig_mapping(engine), (x[:1],))
        with torch.no_grad():
            for i in range(0, x.shape[0], 4):
                prepared(x[i : i + 4])
        quantized = convert_fx(prepared)
        with torch.no_grad():
            ref = outputs_of(net(x))
            got = outputs_of(quantized(x))
        return {"engine": engine, "sqnrDb": [sqnr_db(r.float(), q.float()) for r, q in zip(ref, got)]}
    except Exception as e:  # FX's symbolic trace or a quantized kernel refuses the model
        return {"reason": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}


def export(net, x, path, opset, output_names):
    dynamic = {"input": {0: "N"}}
    for name in output_names:
        dynamic[name] = {0: "N"}
    torch.onnx.export(
        net,
        x[:1],
        path,
        opset_version=opset,
        input_names=["input"],
        output_names=output_names,
        dynamic_axes=dynamic,
        do_constant_folding=True,
    )


def build(cache, name, entry, count):
    folder = os.path.join(cache, name)
    manifest = os.path.join(folder, "model.json")
    if os.path.exists(manifest):
        print(f"  {name}: cached", flush=True)
        return
    os.makedirs(os.path.join(folder, "calib"), exist_ok=True)
    torch.manual_seed(0)
    net = entry["build"]()
    settle_batch_norm(net, entry["shape"], 1)
    x = samples(entry, count, 2)
    np.save(os.path.join(folder, "calib", "x.npy"), x.numpy().astype(np.float32))
    with torch.no_grad():
        outputs = outputs_of(net(x[:1]))
    output_names = ["output"] if len(outputs) == 1 else [f"output_{i}" for i in range(len(outputs))]
    files = {}
    for opset in OPSETS:
        path = os.path.join(folder, f"{name}-op{opset}.onnx")
        try:
            export(net, x, path, opset, output_names)
            files[str(opset)] = os.path.basename(path)
        except Exception as e:
            files[str(opset)] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
    fx = fx_ptq(net, x)
    info = {
        "version": 1,
        "name": name,
        "family": entry["family"],
        "source": entry["source"],
        "inputShape": [None] + entry["shape"][1:],
        "image": bool(entry.get("image")),
        "outputs": [list(o.shape[1:]) for o in outputs],
        "samples": count,
        "onnx": files,
        "fx": fx,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
    }
    if "maxElements" in entry:
        info["maxElements"] = entry["maxElements"]
    with open(manifest + ".tmp", "w") as f:
        json.dump(info, f, indent=1)
    os.replace(manifest + ".tmp", manifest)
    fx_text = fx.get("reason") or ", ".join("inf" if v is None else f"{v:.2f}" for v in fx["sqnrDb"]) + " dB"
    print(f"  {name}: exported ({', '.join(k for k, v in files.items() if isinstance(v, str))}); FX {fx_text}", flush=True)


def main(argv):
    if not argv or argv[0].startswith("--"):
        sys.exit(__doc__)
    cache = argv[0]
    only = None
    count = 8
    rest = argv[1:]
    while rest:
        flag = rest.pop(0)
        if flag == "--only":
            only = set(rest.pop(0).split(","))
        elif flag == "--samples":
            count = int(rest.pop(0))
        elif flag == "--list":
            print(json.dumps({k: {"family": v["family"], "shape": v["shape"]} for k, v in MODELS.items()}))
            return
        else:
            sys.exit(f"unknown option {flag}\n{__doc__}")
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))
    names = [n for n in MODELS if only is None or n in only]
    print(f"exporting {len(names)} PyTorch model(s) into {cache}", flush=True)
    for name in names:
        try:
            build(cache, name, MODELS[name], count)
        except Exception:
            print(f"  {name}: FAILED\n{traceback.format_exc()}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
