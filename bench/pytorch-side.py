"""PyTorch's side of `pnpm bench`: the same protocols (docs/benchmark.md) timed with PyTorch on this machine,
so the bench can print QTK / PyTorch ratios measured in the same run. Prints one JSON object whose keys match
the bench's: float_train_step_ms, qat_train_step_ms, calib_1024_s {min_max, histogram}, int_eval_10k_s,
float_eval_10k_s. Weights are random (the timings do not depend on them). `--only` times just the listed
figures, so the bench can run each right after QTK's own (the ratio then compares the same minute).

usage: /usr/bin/python3 bench/pytorch-side.py --data DIR [--steps N] [--threads N] [--only KEY,KEY...]
"""
import argparse
import copy
import gzip
import json
import time

import numpy as np
import torch
from torch import nn
from torch.ao.quantization import (
    MinMaxObserver,
    PerChannelMinMaxObserver,
    QConfig,
    QConfigMapping,
    get_default_qat_qconfig_mapping,
    get_default_qconfig_mapping,
)
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx, prepare_qat_fx


def read_images(path, limit=None):
    """Fashion-MNIST IDX images (plain or .gz) normalised as QTK does: (pixel / 255 - 0.5) / 0.5, shape [N, 1, 28, 28]."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    count, rows, cols = (int.from_bytes(raw[i : i + 4], "big") for i in (4, 8, 12))
    pixels = np.frombuffer(raw, dtype=np.uint8, offset=16, count=count * rows * cols)
    images = pixels.reshape(count, 1, rows, cols)[:limit].astype(np.float32)
    return torch.from_numpy((images / 255.0 - 0.5) / 0.5)


def find(data, stem):
    for name in (f"{data}/{stem}.gz", f"{data}/{stem}"):
        try:
            open(name, "rb").close()
            return name
        except OSError:
            pass
    raise SystemExit(f"pytorch-side: no {stem}(.gz) in {data}")


class Block(nn.Module):
    """ReferenceNet's residual block: conv-bn-relu, conv-bn, a 1x1 conv-bn shortcut when the shape changes, add, relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else None
        )
        self.relu2 = nn.ReLU()

    def forward(self, x):
        y = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.relu2(y + (self.short(x) if self.short is not None else x))


class ReferenceNet(nn.Module):
    """The benchmark's reference network (examples/src/reference-net.ts) in PyTorch."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layer1 = Block(16, 16, 1)
        self.layer2 = Block(16, 32, 2)
        self.layer3 = Block(32, 64, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        y = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return self.fc(torch.flatten(self.pool(y), 1))


def train_step_ms(model, x, y, steps, warmup=5):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    model.train()
    for i in range(warmup + steps):
        if i == warmup:
            start = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return (time.perf_counter() - start) / steps * 1000


def eval_seconds(model, images, batch=500):
    model.eval()
    with torch.no_grad():
        model(images[:batch])  # warm-up
        start = time.perf_counter()
        for i in range(0, len(images), batch):
            model(images[i : i + batch])
    return time.perf_counter() - start


FIGURES = "float_train_step_ms,qat_train_step_ms,float_eval_10k_s,calib_1024_s,int_eval_10k_s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default=FIGURES, help="comma-separated figures to time (default: all)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    unknown = only - set(FIGURES.split(","))
    if unknown:
        parser.error(f"--only: unknown figure(s) {', '.join(sorted(unknown))}; use some of {FIGURES}")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    torch.backends.quantized.engine = "onednn"
    train = read_images(find(args.data, "train-images-idx3-ubyte"), 1024)
    test = read_images(find(args.data, "t10k-images-idx3-ubyte"))
    x, y = train[:64], torch.randint(0, 10, (64,))
    example = (train[:1],)
    net = ReferenceNet()
    out = {"torch": torch.__version__, "threads": args.threads}
    if "float_train_step_ms" in only:
        out["float_train_step_ms"] = train_step_ms(copy.deepcopy(net), x, y, args.steps)
    if "qat_train_step_ms" in only:
        qat = prepare_qat_fx(copy.deepcopy(net).train(), get_default_qat_qconfig_mapping("onednn"), example)
        out["qat_train_step_ms"] = train_step_ms(qat, x, y, args.steps)
    if "float_eval_10k_s" in only:
        out["float_eval_10k_s"] = eval_seconds(net, test)
    if not only & {"calib_1024_s", "int_eval_10k_s"}:
        print(json.dumps(out))
        return
    min_max = QConfigMapping().set_global(
        QConfig(
            activation=MinMaxObserver.with_args(dtype=torch.quint8),
            weight=PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric),
        )
    )
    calib = {}
    calibrated = None
    for name, mapping in (("min_max", min_max), ("histogram", get_default_qconfig_mapping("onednn"))):
        prepared = prepare_fx(copy.deepcopy(net).eval(), mapping, example)
        with torch.no_grad():
            start = time.perf_counter()
            for i in range(0, len(train), 64):
                prepared(train[i : i + 64])
            calib[name] = time.perf_counter() - start
        if name == "min_max":
            calibrated = prepared
            if "calib_1024_s" not in only:
                break
    if "calib_1024_s" in only:
        out["calib_1024_s"] = calib
    if "int_eval_10k_s" in only:
        out["int_eval_10k_s"] = eval_seconds(convert_fx(calibrated), test)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
