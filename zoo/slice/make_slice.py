"""Writes the zoo's CI slice: for each model family, a tiny PyTorch module made of the ops that family brought into
the zoo, exported by torch.onnx (PyTorch 1.13) as a few-KB ONNX file beside this script. zoo/slice.test.ts runs
them without torch. Regenerate with: /usr/bin/python3 zoo/slice/make_slice.py (the files are deterministic)."""

import os
from functools import partial

import torch
from torch import nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def cbr(i, o, k=3, s=1, g=1, act=None):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o), act or nn.ReLU())


class ResnetBlock(nn.Module):  # resnet / wide_resnet: conv-BN-ReLU, residual add, max pool, global pool, linear
    def __init__(s):
        super().__init__()
        s.stem, s.pool = cbr(3, 8, s=2), nn.MaxPool2d(3, 2, 1)
        s.a, s.b = cbr(8, 8), nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8))
        s.fc = nn.Linear(8, 5)

    def forward(s, x):
        x = s.pool(s.stem(x))
        x = F.relu(x + s.b(s.a(x)))
        return s.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class ResnextBlock(nn.Module):  # resnext / regnet: grouped 3x3 conv in a bottleneck
    def __init__(s):
        super().__init__()
        s.a, s.g, s.c = cbr(3, 8, 1), cbr(8, 8, g=4), nn.Conv2d(8, 3, 1)

    def forward(s, x):
        return F.relu(x + s.c(s.g(s.a(x))))


class VggHead(nn.Module):  # vgg / alexnet: max pools, adaptive avg pool to a fixed grid, flatten, dropout, linears
    def __init__(s):
        super().__init__()
        s.f = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        s.c = nn.Sequential(nn.Dropout(), nn.Linear(4 * 2 * 2, 8), nn.ReLU(), nn.Linear(8, 5))

    def forward(s, x):
        return s.c(torch.flatten(F.adaptive_avg_pool2d(s.f(x), (2, 2)), 1))


class Fire(nn.Module):  # squeezenet: squeeze, two expands concatenated, ceil-mode max pool
    def __init__(s):
        super().__init__()
        s.sq, s.e1, s.e3 = nn.Conv2d(3, 4, 1), nn.Conv2d(4, 4, 1), nn.Conv2d(4, 4, 3, padding=1)
        s.pool = nn.MaxPool2d(3, 2, ceil_mode=True)

    def forward(s, x):
        x = F.relu(s.sq(s.pool(x)))
        return torch.cat([F.relu(s.e1(x)), F.relu(s.e3(x))], 1)


class DenseBlock(nn.Module):  # densenet: BN-ReLU-conv on a concat (BN after no conv), transition avg pool
    def __init__(s):
        super().__init__()
        s.conv0 = nn.Conv2d(3, 8, 3, padding=1)
        s.l1 = nn.Sequential(nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 4, 3, padding=1, bias=False))
        s.t = nn.Sequential(nn.BatchNorm2d(12), nn.ReLU(), nn.Conv2d(12, 6, 1, bias=False), nn.AvgPool2d(2, 2))

    def forward(s, x):
        x = s.conv0(x)
        return s.t(torch.cat([x, s.l1(x)], 1))


class Inception(nn.Module):  # googlenet / inception_v3: branches concatenated, 3x3 pools with stride 1, padding 1
    def __init__(s):
        super().__init__()
        s.b1, s.b3 = cbr(3, 4, 1), cbr(3, 4, 3)
        s.bp = cbr(3, 4, 1)

    def forward(s, x):
        pooled = F.avg_pool2d(x, 3, 1, 1)
        return torch.cat([s.b1(x), s.b3(x), s.bp(F.max_pool2d(pooled, 3, 1, 1))], 1)


class InvertedResidual(nn.Module):  # mobilenet_v2 / mnasnet: expand, depthwise with ReLU6, project, residual
    def __init__(s):
        super().__init__()
        s.e, s.d = cbr(4, 8, 1, act=nn.ReLU6()), cbr(8, 8, g=8, act=nn.ReLU6())
        s.p = nn.Sequential(nn.Conv2d(8, 4, 1, bias=False), nn.BatchNorm2d(4))

    def forward(s, x):
        return x + s.p(s.d(s.e(x)))


class SqueezeExciteBlock(nn.Module):  # a conv block, then squeeze-excite: x * gate(se2(squeeze_act(se1(pool(x)))))
    def __init__(s, act, squeeze_act, gate):
        super().__init__()
        s.c = cbr(3, 8, act=act())
        s.se1, s.se2 = nn.Conv2d(8, 4, 1), nn.Conv2d(4, 8, 1)
        s.squeeze_act, s.gate = squeeze_act, gate

    def forward(s, x):
        x = s.c(x)
        return x * s.gate(s.se2(s.squeeze_act(s.se1(F.adaptive_avg_pool2d(x, 1)))))


class ShuffleBlock(nn.Module):  # shufflenet_v2 / mnasnet: chunk, channel shuffle, x.mean([2, 3]) as the global pool
    def __init__(s):
        super().__init__()
        s.b = cbr(4, 4, 1)
        s.fc = nn.Linear(8, 5)
        # input [N, 8, H, W]: two halves of 4

    def forward(s, x):
        a, b = x.chunk(2, dim=1)
        x = torch.cat([a, s.b(b)], 1)
        n, c, h, w = x.shape
        x = x.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        return s.fc(x.mean([2, 3]))


class ConvNextBlock(nn.Module):  # convnext: depthwise 7x7, permute, LayerNorm, linear, GELU, layer scale
    def __init__(s):
        super().__init__()
        s.dw, s.norm = nn.Conv2d(8, 8, 7, padding=3, groups=8), nn.LayerNorm(8)
        s.l1, s.l2 = nn.Linear(8, 16), nn.Linear(16, 8)
        s.gamma = nn.Parameter(torch.full((8,), 0.5))

    def forward(s, x):
        y = s.norm(s.dw(x).permute(0, 2, 3, 1))
        y = s.gamma * s.l2(F.gelu(s.l1(y)))
        return x + y.permute(0, 3, 1, 2)


class SegHead(nn.Module):  # fcn / deeplab / lraspp: stride-2 features, sigmoid gate, bilinear upsample
    def __init__(s):
        super().__init__()
        s.f, s.g, s.h = cbr(3, 8, s=2), nn.Conv2d(8, 8, 1), nn.Conv2d(8, 3, 1)

    def forward(s, x):
        f = s.f(x)
        f = f * torch.sigmoid(s.g(F.adaptive_avg_pool2d(f, 1)))
        return F.interpolate(s.h(f), size=x.shape[-2:], mode="bilinear", align_corners=False)


class FpnNeck(nn.Module):  # detection: two scales, nearest upsample + add (the FPN), 3x3 output convs, two outputs
    def __init__(s):
        super().__init__()
        s.c3, s.c4 = cbr(3, 8, s=2), cbr(8, 8, s=2)
        s.l3, s.l4 = nn.Conv2d(8, 8, 1), nn.Conv2d(8, 8, 1)
        s.o3, s.o4 = nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)

    def forward(s, x):
        c3 = s.c3(x)
        c4 = s.c4(c3)
        p4 = s.l4(c4)
        p3 = s.l3(c3) + F.interpolate(p4, size=c3.shape[-2:], mode="nearest")
        return s.o3(p3), s.o4(p4)


class VitBlock(nn.Module):  # vit: patch conv, class token (expand + concat), positions, pre-norm attention, GELU MLP
    def __init__(s, d=16):
        super().__init__()
        s.patch = nn.Conv2d(3, d, 4, 4)
        s.cls = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        s.pos = nn.Parameter(torch.randn(1, 5, d) * 0.1)
        s.n1, s.attn = nn.LayerNorm(d), nn.MultiheadAttention(d, 2, batch_first=True)
        s.n2, s.mlp = nn.LayerNorm(d), nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        s.head = nn.Linear(d, 5)

    def forward(s, x):
        x = s.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([s.cls.expand(x.shape[0], -1, -1), x], 1) + s.pos
        y = s.n1(x)
        x = x + s.attn(y, y, y, need_weights=False)[0]
        x = x + s.mlp(s.n2(x))
        return s.head(x[:, 0])


class BertBlock(nn.Module):  # bert-style: nn.TransformerEncoderLayer (GELU) on [N, T, D], mean pooled
    def __init__(s):
        super().__init__()
        s.enc = nn.TransformerEncoderLayer(16, 2, 32, activation="gelu", batch_first=True)
        s.head = nn.Linear(16, 4)

    def forward(s, x):
        return s.head(s.enc(x).mean(1))


class UnetBlock(nn.Module):  # unet: down conv, max pool, transposed-conv up, skip concat
    def __init__(s):
        super().__init__()
        s.d, s.b = cbr(3, 4), cbr(4, 8)
        s.up, s.m = nn.ConvTranspose2d(8, 4, 2, stride=2), cbr(8, 4)
        s.h = nn.Conv2d(4, 2, 1)

    def forward(s, x):
        d = s.d(x)
        return s.h(s.m(torch.cat([s.up(s.b(F.max_pool2d(d, 2))), d], 1)))


class SpeechBlock(nn.Module):  # speech cnn: Conv1d, BatchNorm1d, ReLU over [N, C, T], mean over time, linear
    def __init__(s):
        super().__init__()
        s.c = nn.Sequential(nn.Conv1d(8, 8, 5, 2, 2, bias=False), nn.BatchNorm1d(8), nn.ReLU())
        s.fc = nn.Linear(8, 4)

    def forward(s, x):
        return s.fc(s.c(x).mean(2))


IMG = [1, 3, 8, 8]
SLICE = {
    "resnet": (ResnetBlock, IMG, (17,)),
    "resnext": (ResnextBlock, IMG, (17,)),
    "vgg": (VggHead, IMG, (17,)),
    "squeezenet": (Fire, IMG, (17,)),
    "densenet": (DenseBlock, IMG, (17,)),
    "inception": (Inception, IMG, (17,)),
    "mobilenet_v2": (InvertedResidual, [1, 4, 8, 8], (17,)),
    # mobilenet_v3: hardswish, squeeze-excite with hardsigmoid
    "mobilenet_v3": (partial(SqueezeExciteBlock, nn.Hardswish, F.relu, F.hardsigmoid), IMG, (11, 17)),
    "shufflenet": (ShuffleBlock, [1, 8, 8, 8], (17,)),
    # efficientnet: SiLU, squeeze-excite with sigmoid
    "efficientnet": (partial(SqueezeExciteBlock, nn.SiLU, F.silu, torch.sigmoid), IMG, (17,)),
    "convnext": (ConvNextBlock, [1, 8, 8, 8], (13, 17)),
    "segmentation": (SegHead, IMG, (17,)),
    "fpn": (FpnNeck, IMG, (17,)),
    "vit": (VitBlock, IMG, (13, 17)),
    "bert": (BertBlock, [1, 6, 16], (17,)),
    "unet": (UnetBlock, IMG, (17,)),
    "speech": (SpeechBlock, [1, 8, 16], (17,)),
}


def main():
    for name, (cls, shape, opsets) in SLICE.items():
        torch.manual_seed(0)
        net = cls()
        net.train()
        with torch.no_grad():
            for _ in range(3):
                net(torch.randn(*([4] + shape[1:])))
        net.eval()
        x = torch.randn(*shape)
        outs = net(x)
        names = ["output"] if isinstance(outs, torch.Tensor) else [f"output_{i}" for i in range(len(outs))]
        for opset in opsets:
            path = os.path.join(HERE, f"{name}-op{opset}.onnx")
            dynamic = {n: {0: "N"} for n in ["input", *names]}
            torch.onnx.export(net, x, path, opset_version=opset, input_names=["input"], output_names=names,
                              dynamic_axes=dynamic)
            print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
