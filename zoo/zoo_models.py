"""The model zoo's PyTorch architectures: torchvision's families and plain PyTorch modules, random weights.

Each entry: build (a function returning the float nn.Module), shape (the export's input, batch 1), family, source,
image (whether samples are images). Large fully connected heads (VGG, AlexNet) are narrowed to 256 units so that
the zoo fits a small machine; everything else is the architecture as torchvision defines it.
"""

from collections import OrderedDict

import torch
import torchvision.models as tvm
import torchvision.models.segmentation as seg
from torch import nn
from torchvision.ops import FeaturePyramidNetwork

IMAGE = [1, 3, 224, 224]


def narrow_classifier(net, width=256):
    """VGG / AlexNet with their 4096-wide classifier narrowed (same layers and order, fewer units)."""
    old = net.classifier
    layers = []
    first = True
    for m in old:
        if isinstance(m, nn.Linear):
            last = m is [x for x in old if isinstance(x, nn.Linear)][-1]
            layers.append(nn.Linear(m.in_features if first else width, m.out_features if last else width))
            first = False
        else:
            layers.append(m)
    net.classifier = nn.Sequential(*layers)
    return net


class OutputOf(nn.Module):
    """A segmentation model's dict output as its 'out' tensor."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


class ResNetFpn(nn.Module):
    """ResNet-18's stages C2..C5 with torchvision's FeaturePyramidNetwork: four maps, as a detector's neck gives."""

    def __init__(self):
        super().__init__()
        r = tvm.resnet18(weights=None)
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool)
        self.stages = nn.ModuleList([r.layer1, r.layer2, r.layer3, r.layer4])
        self.fpn = FeaturePyramidNetwork([64, 128, 256, 512], 64)

    def forward(self, x):
        x = self.stem(x)
        feats = OrderedDict()
        for i, s in enumerate(self.stages):
            x = s(x)
            feats[f"p{i + 2}"] = x
        return tuple(self.fpn(feats).values())


class SsdLite(nn.Module):
    """MobileNetV2 features, an FPN over two scales, and SSD-lite heads (depthwise separable convs):
    class scores and box offsets per scale."""

    def __init__(self, classes=21, anchors=6):
        super().__init__()
        f = tvm.mobilenet_v2(weights=None).features
        self.low = f[:14]  # stride 16, 96 channels
        self.high = f[14:]  # stride 32, 1280 channels
        self.fpn = FeaturePyramidNetwork([96, 1280], 96)

        def head(out):
            return nn.Sequential(
                nn.Conv2d(96, 96, 3, padding=1, groups=96, bias=False),
                nn.BatchNorm2d(96),
                nn.ReLU6(inplace=True),
                nn.Conv2d(96, out, 1),
            )

        self.cls = nn.ModuleList([head(classes * anchors) for _ in range(2)])
        self.box = nn.ModuleList([head(4 * anchors) for _ in range(2)])

    def forward(self, x):
        low = self.low(x)
        high = self.high(low)
        maps = list(self.fpn(OrderedDict([("low", low), ("high", high)])).values())
        scores = torch.cat([c(m).flatten(1) for c, m in zip(self.cls, maps)], 1)
        boxes = torch.cat([b(m).flatten(1) for b, m in zip(self.box, maps)], 1)
        return scores, boxes


class UNet(nn.Module):
    """A small UNet: three down steps (conv-BN-ReLU ×2, max pool), transposed-conv up steps with skip concats."""

    def __init__(self, channels=(16, 32, 64, 128), classes=2):
        super().__init__()

        def block(i, o):
            return nn.Sequential(
                nn.Conv2d(i, o, 3, padding=1, bias=False),
                nn.BatchNorm2d(o),
                nn.ReLU(inplace=True),
                nn.Conv2d(o, o, 3, padding=1, bias=False),
                nn.BatchNorm2d(o),
                nn.ReLU(inplace=True),
            )

        c = channels
        self.down = nn.ModuleList([block(3, c[0]), block(c[0], c[1]), block(c[1], c[2])])
        self.bottom = block(c[2], c[3])
        self.up = nn.ModuleList([nn.ConvTranspose2d(c[i + 1], c[i], 2, stride=2) for i in (2, 1, 0)])
        self.merge = nn.ModuleList([block(2 * c[i], c[i]) for i in (2, 1, 0)])
        self.head = nn.Conv2d(c[0], classes, 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = nn.functional.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips)):
            x = merge(torch.cat([up(x), skip], 1))
        return self.head(x)


class SpeechCnn(nn.Module):
    """An LSTM-free keyword-spotting CNN over [N, 40 mel bands, 98 frames]: 1-D convs, BN, ReLU, pooling."""

    def __init__(self, mels=40, classes=12):
        super().__init__()
        layers = []
        c = mels
        for o, k, s in ((64, 5, 2), (64, 3, 1), (128, 3, 2), (128, 3, 1), (256, 3, 2)):
            layers += [nn.Conv1d(c, o, k, stride=s, padding=k // 2, bias=False), nn.BatchNorm1d(o), nn.ReLU(inplace=True)]
            c = o
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        return self.fc(self.body(x).mean(2))


class BertStyle(nn.Module):
    """A BERT-style encoder on token embeddings [N, T, D]: learned positions, nn.TransformerEncoder (GELU,
    pre-computed embeddings as the input), a LayerNorm and a classifier on the first token."""

    def __init__(self, tokens=32, dim=128, heads=4, layers=2, classes=2):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.norm(self.encoder(x + self.pos))[:, 0])


class TinyEncoder(nn.Module):
    """The 2-layer GELU encoder of the first zoo trial ([N, 16, 64]), mean-pooled, with a linear head."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, 128, activation="gelu", batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.enc(x).mean(1))


def vit_small():
    net = tvm.VisionTransformer(image_size=224, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192, mlp_dim=768)
    # torchvision zero-initialises the classifier head: its output would be 0 whatever the model computes, and
    # every quantization "identical"; random weights, as a trained head has, make the output measure something
    nn.init.normal_(net.heads.head.weight, std=0.02)
    nn.init.normal_(net.heads.head.bias, std=0.02)
    return net


def swin_small():
    from torchvision.models.swin_transformer import SwinTransformer

    return SwinTransformer(patch_size=[4, 4], embed_dim=48, depths=[2, 2, 2, 2], num_heads=[2, 4, 8, 16], window_size=[7, 7])


def tv(fn, **kw):
    return lambda: fn(weights=None, **kw)


def cls(build, family, source, shape=IMAGE, max_elements=None):
    """max_elements: the ONNX import budget qtk needs for the model (--max-elements), where the default refuses it."""
    entry = {"build": build, "shape": shape, "family": family, "source": source, "image": len(shape) == 4}
    if max_elements:
        entry["maxElements"] = max_elements
    return entry


MODELS = {
    "resnet18": cls(tv(tvm.resnet18), "resnet", "torchvision resnet18"),
    "resnet50": cls(tv(tvm.resnet50), "resnet", "torchvision resnet50"),
    "resnext50_32x4d": cls(tv(tvm.resnext50_32x4d), "resnext", "torchvision resnext50_32x4d"),
    "wide_resnet50_2": cls(tv(tvm.wide_resnet50_2), "wide_resnet", "torchvision wide_resnet50_2"),
    "vgg11_bn": cls(lambda: narrow_classifier(tvm.vgg11_bn(weights=None)), "vgg", "torchvision vgg11_bn, classifier 256 wide"),
    "alexnet": cls(lambda: narrow_classifier(tvm.alexnet(weights=None)), "alexnet", "torchvision alexnet, classifier 256 wide"),
    "squeezenet1_1": cls(tv(tvm.squeezenet1_1), "squeezenet", "torchvision squeezenet1_1"),
    "densenet121": cls(tv(tvm.densenet121), "densenet", "torchvision densenet121"),
    "googlenet": cls(tv(tvm.googlenet, aux_logits=False, init_weights=True), "googlenet", "torchvision googlenet"),
    "inception_v3": cls(
        tv(tvm.inception_v3, aux_logits=False, init_weights=True), "inception", "torchvision inception_v3", [1, 3, 299, 299]
    ),
    "mobilenet_v2": cls(tv(tvm.mobilenet_v2), "mobilenet", "torchvision mobilenet_v2"),
    "mobilenet_v3_small": cls(tv(tvm.mobilenet_v3_small), "mobilenet", "torchvision mobilenet_v3_small"),
    "mobilenet_v3_large": cls(tv(tvm.mobilenet_v3_large), "mobilenet", "torchvision mobilenet_v3_large"),
    "mnasnet0_5": cls(tv(tvm.mnasnet0_5), "mnasnet", "torchvision mnasnet0_5"),
    "shufflenet_v2_x0_5": cls(tv(tvm.shufflenet_v2_x0_5), "shufflenet", "torchvision shufflenet_v2_x0_5"),
    "efficientnet_b0": cls(tv(tvm.efficientnet_b0), "efficientnet", "torchvision efficientnet_b0"),
    "efficientnet_v2_s": cls(tv(tvm.efficientnet_v2_s), "efficientnet_v2", "torchvision efficientnet_v2_s"),
    "regnet_x_400mf": cls(tv(tvm.regnet_x_400mf), "regnet", "torchvision regnet_x_400mf"),
    "regnet_y_400mf": cls(tv(tvm.regnet_y_400mf), "regnet", "torchvision regnet_y_400mf"),
    "convnext_tiny": cls(tv(tvm.convnext_tiny), "convnext", "torchvision convnext_tiny"),
    "fcn_resnet50": cls(
        lambda: OutputOf(seg.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False)),
        "segmentation",
        "torchvision fcn_resnet50",
        # its dilated ResNet-50 runs 18 G multiply-adds at batch 1, over the import's default budget of 17 G
        max_elements=2**26,
    ),
    "deeplabv3_mobilenet_v3_large": cls(
        lambda: OutputOf(seg.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False)),
        "segmentation",
        "torchvision deeplabv3_mobilenet_v3_large",
    ),
    "lraspp_mobilenet_v3_large": cls(
        lambda: OutputOf(seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)),
        "segmentation",
        "torchvision lraspp_mobilenet_v3_large",
    ),
    "resnet18_fpn": cls(ResNetFpn, "detection", "resnet18 stages + torchvision.ops.FeaturePyramidNetwork (4 maps)"),
    "ssdlite_mobilenet_v2_fpn": cls(
        SsdLite, "detection", "mobilenet_v2 features + FPN + SSD-lite heads (scores, boxes)", [1, 3, 320, 320]
    ),
    "vit_small": cls(vit_small, "transformer", "torchvision VisionTransformer, 4 layers, dim 192"),
    "swin_small": cls(swin_small, "transformer", "torchvision SwinTransformer, depths 2-2-2-2, dim 48"),
    "bert_style": cls(BertStyle, "transformer", "nn.TransformerEncoder (GELU) over [N, 32, 128] embeddings", [1, 32, 128]),
    "bert_tiny": cls(TinyEncoder, "transformer", "nn.TransformerEncoder (GELU) over [N, 16, 64], mean pooled", [1, 16, 64]),
    "unet": cls(UNet, "segmentation", "plain PyTorch UNet (3 levels, transposed convs)", [1, 3, 128, 128]),
    "speech_cnn": cls(SpeechCnn, "speech", "plain PyTorch 1-D conv keyword spotter over [N, 40, 98]", [1, 40, 98]),
}
