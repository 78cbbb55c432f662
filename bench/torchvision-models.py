"""The torchvision-shaped models of the quantize benchmark: ResNet-18, MobileNetV2, MobileNetV3-small,
EfficientNet-B0 and a small ViT (the model zoo's vit_small) with seeded random weights (no downloads), exported to
ONNX for `qtk quantize`, and PyTorch FX post-training quantization of the same models timed (prepare_fx +
calibration on the same samples + convert_fx).

Beside each model it writes <model>.ort-calib.onnx: the graph ONNX Runtime's static quantizer calibrates with
(its MinMax calibrator adds a ReduceMin and a ReduceMax output for every float tensor a node produces), which
bench/ort-calibration.ts runs in onnxruntime-node on the same samples.

usage: /usr/bin/python3 bench/torchvision-models.py --out DIR [--samples N] [--threads N] [--time MODEL,...]
Writes DIR/<model>.onnx and DIR/calib/x.npy (N samples, 3x224x224 in [-1, 1]) unless they exist, then prints one
JSON object: {"quantize_s": {<model>: seconds}, "cannot": {<model>: why PyTorch FX cannot}, "torch": version}. `--time` times only the listed models (an
empty list: export only), so the bench can time each right after `qtk quantize` on it.
"""
import argparse
import copy
import json
import os
import time

import numpy as np
import onnx
import torch
import torchvision
from onnx import TensorProto, helper
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

def vit_small():
    net = torchvision.models.VisionTransformer(
        image_size=224, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192, mlp_dim=768
    )
    # torchvision zero-initialises the classifier head; a trained head is not zero
    torch.nn.init.normal_(net.heads.head.weight, std=0.02)
    torch.nn.init.normal_(net.heads.head.bias, std=0.02)
    return net


MODELS = {
    "resnet18": lambda: torchvision.models.resnet18(weights=None),
    "mobilenet_v2": lambda: torchvision.models.mobilenet_v2(weights=None),
    "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(weights=None),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(weights=None),
    "vit_small": vit_small,
}
# LayerNormalization is an ONNX op from opset 17; at 13 the exporter spells it out in seven nodes
OPSET = {"vit_small": 17}
# the ViT reshapes its patches to the traced batch size unless the batch dimension is exported as free
FREE_BATCH = {"vit_small"}


def build(name):
    torch.manual_seed(0)
    return MODELS[name]().eval()


def ort_calibration_graph(path, out):
    """The graph ONNX Runtime's MinMax calibrator runs: every float tensor a node produces gets a ReduceMin and a
    ReduceMax (keepdims 0) as graph outputs, after the model's own outputs."""
    model = onnx.shape_inference.infer_shapes(onnx.load(path))
    graph = model.graph
    types = {v.name: v.type.tensor_type.elem_type for v in list(graph.value_info) + list(graph.output)}
    for node in list(graph.node):
        for value in node.output:
            if types.get(value) != TensorProto.FLOAT:
                continue
            for op in ("ReduceMin", "ReduceMax"):
                name = f"{value}_{op}"
                graph.node.append(helper.make_node(op, [value], [name], keepdims=0))
                graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, []))
    onnx.save(model, out)


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
    cannot = {}
    for name in MODELS:
        model = build(name)
        path = os.path.join(args.out, f"{name}.onnx")
        if not os.path.exists(path):
            opset = OPSET.get(name, 13)
            free = {"image": {0: "batch"}, "logits": {0: "batch"}} if name in FREE_BATCH else None
            torch.onnx.export(
                model, example, path, opset_version=opset, input_names=["image"], output_names=["logits"], dynamic_axes=free
            )
        ort_path = os.path.join(args.out, f"{name}.ort-calib.onnx")
        if not os.path.exists(ort_path):
            ort_calibration_graph(path, ort_path)
        if name not in timed:
            continue
        start = time.perf_counter()
        try:
            prepared = prepare_fx(copy.deepcopy(model), get_default_qconfig_mapping("onednn"), example)
        except torch.fx.proxy.TraceError as e:
            # torchvision's VisionTransformer unpacks x.shape, which symbolic tracing cannot
            cannot[name] = f"prepare_fx cannot trace it: {str(e).split('.')[0]}"
            continue
        with torch.no_grad():
            # batches of 32, as qtk quantize's default --batch
            for i in range(0, len(samples), 32):
                prepared(samples[i : i + 32])
        convert_fx(prepared)
        seconds[name] = time.perf_counter() - start
    print(json.dumps({"torch": torch.__version__, "quantize_s": seconds, "cannot": cannot}))


if __name__ == "__main__":
    main()
