"""Zoo networks with trained weights for docs/ptq-accuracy.md: torchvision architectures (their first conv taking one
channel, ten classes) trained briefly on Fashion-MNIST in PyTorch, exported to ONNX for `qtk quantize`, and
quantized by PyTorch FX (onednn) on the same weights and calibration samples.

  train: /usr/bin/python3 bench/ptq-zoo.py train --arch resnet18 --data DIR --out runs/ptq-zoo [--epochs 1]
         writes OUT/ARCH.pt, OUT/ARCH.onnx (BatchNorm folded into the convs, as PyTorch's exporter does in eval),
         OUT/ARCH-bn.onnx (BatchNorm kept, for bias correction from its statistics), and OUT/calib/x.npy (the first
         256 training images) and OUT/test/ (x.npy and labels.txt of the 10,000 test images), normalised as QTK
         does: (pixel / 255 - 0.5) / 0.5. ARCH is a torchvision architecture or mobile_hybrid_net (QTK's
         examples/src/mobile-hybrid-net.ts, layer for layer)
  export: /usr/bin/python3 bench/ptq-zoo.py export --arch resnet18 --out runs/ptq-zoo
         writes OUT/ARCH.onnx and OUT/ARCH-bn.onnx again from OUT/ARCH.pt
  fx:    /usr/bin/python3 bench/ptq-zoo.py fx --arch resnet18 --data DIR --out runs/ptq-zoo
         prints one JSON object: float accuracy, FX min-max and histogram PTQ accuracies (onednn backend,
         per-channel int8 weights)
"""
import argparse
import copy
import gzip
import importlib.util
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision
from torch.ao.quantization import (
    HistogramObserver,
    MinMaxObserver,
    PerChannelMinMaxObserver,
    QConfig,
    get_default_qconfig_mapping,
)
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = int.from_bytes(data[0:4], "big") & 0xFF
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion(data, split):
    prefix = "train" if split == "train" else "t10k"
    images = load_idx(os.path.join(data, f"{prefix}-images-idx3-ubyte.gz")).astype(np.float32)
    labels = load_idx(os.path.join(data, f"{prefix}-labels-idx1-ubyte.gz")).astype(np.int64)
    x = ((images / 255.0 - 0.5) / 0.5)[:, None, :, :]
    return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(labels)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, hidden):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(channels, hidden, 1)
        self.relu = nn.ReLU()
        self.expand = nn.Conv2d(hidden, channels, 1)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        return x * self.gate(self.expand(self.relu(self.reduce(self.pool(x)))))


def conv_bn(cin, cout, k, act, stride=1, groups=1):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act) if act is not None else nn.Sequential(*layers)


class InvertedBlock(nn.Module):
    def __init__(self, cin, hidden, cout, stride):
        super().__init__()
        self.expand = conv_bn(cin, hidden, 1, nn.Hardswish())
        self.depthwise = conv_bn(hidden, hidden, 3, nn.Hardswish(), stride, hidden)
        self.se = SqueezeExcite(hidden, max(4, hidden >> 2))
        self.project = conv_bn(hidden, cout, 1, None)

    def forward(self, x):
        return self.project(self.se(self.depthwise(self.expand(x))))


class MobileHybridNet(nn.Module):
    """examples/src/mobile-hybrid-net.ts in PyTorch (its module paths, without the QuantStub / DeQuantStub)."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn(1, 16, 3, nn.Hardswish(), 2)
        self.block1 = InvertedBlock(16, 32, 24, 2)
        self.block2 = InvertedBlock(24, 64, 32, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.mergeDepthwise = conv_bn(48, 48, 3, nn.ReLU(), 2, 48)
        self.mergePointwise = conv_bn(48, 64, 1, nn.Tanh())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        fine = self.stem(x)
        merged = torch.cat([self.up(self.block2(self.block1(fine))), fine], 1)
        y = self.mergePointwise(self.mergeDepthwise(merged))
        return self.fc(torch.flatten(self.pool(y), 1))


def build(arch):
    """The torchvision architecture, ten classes, its first conv taking one channel (same geometry)."""
    if arch == "mobile_hybrid_net":
        return MobileHybridNet()
    model = getattr(torchvision.models, arch)(num_classes=10)
    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d) and module.in_channels == 3:
            one = nn.Conv2d(1, module.out_channels, module.kernel_size, module.stride, module.padding,
                            module.dilation, module.groups, module.bias is not None)
            parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            setattr(parent, name.rsplit(".", 1)[-1], one)
            break
    return model


def _ptq_accuracy_pytorch():
    """bench/ptq-accuracy-pytorch.py as a module: its accuracy loop is the one both scripts score with."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ptq-accuracy-pytorch.py")
    spec = importlib.util.spec_from_file_location("ptq_accuracy_pytorch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


accuracy = _ptq_accuracy_pytorch().accuracy


def train(args):
    torch.manual_seed(0)
    x, y = fashion(args.data, "train")
    model = build(args.arch)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    steps = args.epochs * (len(x) // 128)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    t0 = time.time()
    step = 0
    for _ in range(args.epochs):
        order = torch.randperm(len(x))
        for i in range(0, len(x) - 127, 128):
            idx = order[i : i + 128]
            loss = loss_fn(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 100 == 0:
                print(f"{args.arch} step {step}/{steps} loss {loss.item():.3f} ({time.time() - t0:.0f} s)", flush=True)
    model.eval()
    os.makedirs(args.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out, f"{args.arch}.pt"))
    export_onnx(model, args)
    for d in ("calib", "test"):
        os.makedirs(os.path.join(args.out, d), exist_ok=True)
    np.save(os.path.join(args.out, "calib", "x.npy"), x[:256].numpy())
    tx, ty = fashion(args.data, "test")
    np.save(os.path.join(args.out, "test", "x.npy"), tx.numpy())
    with open(os.path.join(args.out, "test", "labels.txt"), "w") as f:
        f.write("\n".join(str(int(v)) for v in ty) + "\n")
    print(json.dumps({"arch": args.arch, "float": accuracy(model, tx, ty), "train_s": round(time.time() - t0)}))


def export_onnx(model, args):
    """ARCH.onnx as PyTorch exports in eval (BatchNorm folded), and ARCH-bn.onnx with BatchNorm kept (PRESERVE)."""
    example = torch.zeros(1, 1, 28, 28)
    for suffix, mode in (("", torch.onnx.TrainingMode.EVAL), ("-bn", torch.onnx.TrainingMode.PRESERVE)):
        torch.onnx.export(model, example, os.path.join(args.out, f"{args.arch}{suffix}.onnx"), opset_version=13,
                          input_names=["input"], output_names=["logits"], training=mode)


def export(args):
    model = build(args.arch)
    model.load_state_dict(torch.load(os.path.join(args.out, f"{args.arch}.pt")))
    export_onnx(model.eval(), args)


def fx(args):
    torch.backends.quantized.engine = "onednn"
    model = build(args.arch)
    model.load_state_dict(torch.load(os.path.join(args.out, f"{args.arch}.pt")))
    model.eval()
    calib = torch.from_numpy(np.load(os.path.join(args.out, "calib", "x.npy")))
    tx, ty = fashion(args.data, "test")
    weight = PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
    observers = {
        "min_max": MinMaxObserver.with_args(dtype=torch.quint8, reduce_range=False),
        "histogram": HistogramObserver.with_args(dtype=torch.quint8, reduce_range=False),
    }
    out = {"arch": args.arch, "float": accuracy(model, tx, ty)}
    for name, act in observers.items():
        # onednn's default mapping for its fixed-qparams ops (sigmoid, tanh, hardsigmoid), our qconfig elsewhere
        mapping = get_default_qconfig_mapping("onednn").set_global(QConfig(activation=act, weight=weight))
        prepared = prepare_fx(copy.deepcopy(model), mapping, example_inputs=(calib[:1],))
        with torch.no_grad():
            for i in range(0, len(calib), 32):
                prepared(calib[i : i + 32])
        out[f"fx_{name}"] = accuracy(convert_fx(prepared), tx, ty)
    print(json.dumps(out))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["train", "export", "fx"])
    p.add_argument("--arch", required=True)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--out", default="runs/ptq-zoo")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    {"train": train, "export": export, "fx": fx}[a.command](a)
