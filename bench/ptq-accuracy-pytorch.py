"""PyTorch FX post-training quantization of the reference network with the weights of a QTK float ONNX export, for
docs/ptq-accuracy.md: the float accuracy, then min-max and histogram (onednn's default) PTQ calibrated on the same
samples `qtk quantize` calibrates on, each evaluated on the Fashion-MNIST test images. The ONNX file's initializers
are named as PyTorch's state dict (stem.0.weight, layer1.bn1.running_mean, ...). Prints one JSON object.
usage: /usr/bin/python3 bench/ptq-accuracy-pytorch.py --onnx FILE --calib X.npy --data DIR [--threads N]
"""
import argparse
import copy
import importlib.util
import json
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch.ao.quantization import (
    MinMaxObserver,
    PerChannelMinMaxObserver,
    QConfig,
    QConfigMapping,
    get_default_qconfig_mapping,
)
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx


def pytorch_side():
    """bench/pytorch-side.py as a module: its ReferenceNet and readers."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch-side.py")
    spec = importlib.util.spec_from_file_location("pytorch_side", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def accuracy(model, images, labels, batch=500):
    right = 0
    with torch.no_grad():
        for i in range(0, len(images), batch):
            right += (model(images[i : i + batch]).argmax(1) == labels[i : i + batch]).sum().item()
    return right / len(images)


def read_labels(path):
    import gzip

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    return torch.from_numpy(np.frombuffer(raw, dtype=np.uint8, offset=8).astype(np.int64))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnx", required=True)
    parser.add_argument("--calib", required=True, help="the calibration samples as one .npy [N, 1, 28, 28]")
    parser.add_argument("--data", required=True, help="the directory of the Fashion-MNIST IDX files")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.backends.quantized.engine = "onednn"
    side = pytorch_side()
    net = side.ReferenceNet().eval()
    weights = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in onnx.load(args.onnx).graph.initializer}
    missing, unexpected = net.load_state_dict(weights, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing:
        raise SystemExit(f"ptq-accuracy-pytorch: the ONNX file has no {', '.join(missing)}")
    test = side.read_images(side.find(args.data, "t10k-images-idx3-ubyte"))
    labels = read_labels(side.find(args.data, "t10k-labels-idx1-ubyte"))
    calib = torch.from_numpy(np.load(args.calib).astype(np.float32))
    example = (calib[:1],)
    min_max = QConfigMapping().set_global(
        QConfig(
            activation=MinMaxObserver.with_args(dtype=torch.quint8),
            weight=PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric),
        )
    )
    out = {"torch": torch.__version__, "calibration_samples": len(calib), "float": accuracy(net, test, labels)}
    for name, mapping in (("fx_min_max", min_max), ("fx_histogram", get_default_qconfig_mapping("onednn"))):
        prepared = prepare_fx(copy.deepcopy(net), mapping, example)
        with torch.no_grad():
            for i in range(0, len(calib), 32):
                prepared(calib[i : i + 32])
        out[name] = accuracy(convert_fx(prepared), test, labels)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
