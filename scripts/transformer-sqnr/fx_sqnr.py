"""PyTorch FX int8 PTQ SQNR of the transformer encoders of examples/src/transformer-encoders.ts, with
QTK's weights and the same calibration and test samples (written by examples/src/transformer-sqnr.ts DIR).

Usage: /usr/bin/python3 scripts/transformer-sqnr/fx_sqnr.py DIR   (PyTorch 1.13, python3-torch)
Prints, per model, the float output's agreement with QTK's (a check that the models are the same)
and FX's SQNR of the int8 model against float, with the default qconfig (onednn: histogram observers,
per-channel weights) and with min-max observers.
"""
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.observer import MinMaxObserver, PerChannelMinMaxObserver
from torch.ao.quantization.qconfig import QConfig
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx


class SelfAttention(nn.Module):
    def __init__(self, dim, heads, tokens):
        super().__init__()
        self.dim, self.heads, self.tokens = dim, heads, tokens
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.softmax = nn.Softmax(-1)

    def forward(self, x):
        hd = self.dim // self.heads
        qkv = self.qkv(x).split(self.dim, -1)
        q, k, v = qkv[0], qkv[1], qkv[2]
        split = lambda t: t.reshape(-1, self.tokens, self.heads, hd).transpose(1, 2)
        scores = split(q).matmul(split(k).transpose(-2, -1)).mul(1 / math.sqrt(hd))
        attended = self.softmax(scores).matmul(split(v))
        return self.proj(attended.transpose(1, 2).reshape(-1, self.tokens, self.dim))


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads, tokens, hidden, pre_norm):
        super().__init__()
        self.pre_norm = pre_norm
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, tokens)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def mlp(self, x):
        return self.fc2(self.act(self.fc1(x)))

    def forward(self, x):
        if self.pre_norm:
            y = x + self.attn(self.norm1(x))
            return y + self.mlp(self.norm2(y))
        y = self.norm1(x + self.attn(x))
        return self.norm2(y + self.mlp(y))


class TinyVit(nn.Module):
    def __init__(self, batch=4, dim=32, heads=4, tokens=17, hidden=64):
        super().__init__()
        self.batch, self.dim = batch, dim
        self.patch = nn.Conv2d(3, dim, 4, stride=4)
        self.classToken = nn.Parameter(torch.zeros(1, 1, dim))
        self.position = nn.Parameter(torch.zeros(1, tokens, dim))
        self.layer0 = EncoderLayer(dim, heads, tokens, hidden, True)
        self.layer1 = EncoderLayer(dim, heads, tokens, hidden, True)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        patches = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.classToken.expand(self.batch, 1, self.dim), patches], 1) + self.position
        t = self.layer1(self.layer0(t))
        return self.head(self.norm(t)[:, 0:1].reshape(-1, self.dim))


class TinyBert(nn.Module):
    def __init__(self, dim=32, heads=4, tokens=16, hidden=128):
        super().__init__()
        self.layer0 = EncoderLayer(dim, heads, tokens, hidden, False)
        self.layer1 = EncoderLayer(dim, heads, tokens, hidden, False)

    def forward(self, x):
        return self.layer1(self.layer0(x))


class ConvNextBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.dwconv = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels)
        self.fc1 = nn.Linear(channels, 4 * channels)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * channels, channels)
        self.layerScale = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        y = self.norm(self.dwconv(x).permute(0, 2, 3, 1))
        z = self.fc2(self.act(self.fc1(y))) * self.layerScale
        return x + z.permute(0, 3, 1, 2)


class TinyConvNext(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 4, stride=4)
        self.block0 = ConvNextBlock(16)
        self.block1 = ConvNextBlock(16)

    def forward(self, x):
        return self.block1(self.block0(self.stem(x)))


def tensor(j):
    return torch.tensor(j["data"], dtype=torch.float32).reshape(j["shape"])


def sqnr(ref, y):
    return (10 * torch.log10(ref.pow(2).sum() / (ref - y).pow(2).sum())).item()


def fx_int8(model, calibration, example, global_qconfig):
    # the engine's mapping keeps its fixed-qparams entries (softmax, sigmoid); only the global qconfig changes
    mapping = get_default_qconfig_mapping("onednn")
    if global_qconfig is not None:
        mapping.set_global(global_qconfig)
    prepared = prepare_fx(model, mapping, example_inputs=(example,))
    with torch.no_grad():
        for x in calibration:
            prepared(x)
    return convert_fx(prepared)


def main(directory):
    # docs/benchmark.md's engine (this machine's PyTorch has no FBGEMM)
    torch.backends.quantized.engine = "onednn"
    min_max = QConfig(
        activation=MinMaxObserver.with_args(reduce_range=True),
        weight=PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric),
    )
    for name, make in (("vit", TinyVit), ("bert", TinyBert), ("convnext", TinyConvNext)):
        data = json.load(open(f"{directory}/{name}.json"))
        model = make().eval()
        model.load_state_dict({k: tensor(v) for k, v in data["weights"].items()})
        calibration = [tensor(b) for b in data["calibration"]]
        test = tensor(data["test"])
        with torch.no_grad():
            ref = model(test)
        agreement = (ref - tensor(data["float"])).abs().max().item()
        figures = []
        for label, qconfig in (("default", None), ("min-max", min_max)):
            q = fx_int8(model, calibration, test, qconfig)
            with torch.no_grad():
                figures.append(f"{label} {sqnr(ref, q(test)):.2f} dB")
        print(f"{name}: float max |torch - qtk| {agreement:.2e}; FX int8 SQNR: {', '.join(figures)}")


if __name__ == "__main__":
    main(sys.argv[1])
