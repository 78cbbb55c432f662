"""The torchvision-shaped models of the quantize benchmark: ResNet-18, MobileNetV2 and MobileNetV3-small with
seeded random weights (no downloads), exported to ONNX for `qtk quantize`, and PyTorch FX post-training
quantization of the same models timed (prepare_fx + calibration on the same samples + convert_fx).

usage: /usr/bin/python3 bench/torchvision-models.py --out DIR [--samples N] [--threads N] [--time MODEL,...]
Writes DIR/<model>.onnx and DIR/calib/x.npy (N samples, 3x224x224 in [-1, 1]) unless they exist, then prints one
JSON object: {"quantize_s": {<model>: seconds}, "torch": version}. `--time` times only the listed models (an
empty list: export only), so the bench can time each right after `qtk quantize` on it.
"""
import argparse
import copy
import json
import os
import time

import numpy as np
import torch
import torchvision
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

MODELS = {
    "resnet18": torchvision.models.resnet18,
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "mobilenet_v3_small": torchvision.models.mobilenet_v3_small,
}


def build(name):
    torch.manual_seed(0)
    return MODELS[name](weights=None).eval()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--time", default=",".join(MODELS), help="comma-separated models to time (default: all)")
    args = parser.parse_args()
    timed = {m for m in args.time.split(",") if m}
    if timed - set(MODELS):
        parser.error(f"--time: unknown model(s) {', '.join(sorted(timed - set(MODELS)))}; use some of {', '.join(MODELS)}")
    torch.set_num_threads(args.threads)
    torch.backends.quantized.engine = "onednn"
    os.makedirs(os.path.join(args.out, "calib"), exist_ok=True)
    calib_path = os.path.join(args.out, "calib", "x.npy")
    if not os.path.exists(calib_path):
        rng = np.random.default_rng(0)
        np.save(calib_path, rng.uniform(-1, 1, (args.samples, 3, 224, 224)).astype(np.float32))
    samples = torch.from_numpy(np.load(calib_path))
    example = (samples[:1],)
    seconds = {}
    for name in MODELS:
        model = build(name)
        path = os.path.join(args.out, f"{name}.onnx")
        if not os.path.exists(path):
            torch.onnx.export(model, example, path, opset_version=13, input_names=["image"], output_names=["logits"])
        if name not in timed:
            continue
        start = time.perf_counter()
        prepared = prepare_fx(copy.deepcopy(model), get_default_qconfig_mapping("onednn"), example)
        with torch.no_grad():
            # batches of 32, as qtk quantize's default --batch
            for i in range(0, len(samples), 32):
                prepared(samples[i : i + 32])
        convert_fx(prepared)
        seconds[name] = time.perf_counter() - start
    print(json.dumps({"torch": torch.__version__, "quantize_s": seconds}))


if __name__ == "__main__":
    main()
