"""The networks users bring, written here in PyTorch from their published definitions (not
downloaded), at sizes a test can build: tests/test_onnx_networks.py exports each to ONNX and
checks what the importer makes of it.

- ``MobileNetV2``: Sandler et al. 2018, Table 2 (inverted residuals with linear bottlenecks:
  a 1×1 expansion by ``t``, a 3×3 depthwise convolution, a 1×1 projection; ReLU6; the
  residual where the stride is 1 and the channels agree), channels times ``width`` rounded to
  multiples of 8 as torchvision's ``_make_divisible``, the last 1×1 convolution to 1280
  channels, global average pooling, dropout, a linear classifier.
- ``ResNet18``: He et al. 2016, Table 1 (the 7×7 stride-2 stem and 3×3 max pooling, two basic
  blocks per stage, a 1×1 stride-2 projection where the shape changes,
  ``AdaptiveAvgPool2d((1, 1))``), the channels ``base``, 2·base, 4·base, 8·base (64 in the
  paper).
- ``ViT``: Dosovitskiy et al. 2021 (patches embedded by a strided convolution, learned
  positions, pre-norm encoder layers: multi-head self-attention with fused q/k/v projections
  split into heads, a GELU MLP; the tokens' mean into a linear head, as in the paper's
  global-average-pooling variant), BERT's encoder layer but for the norm's place.
- ``UNet``: Ronneberger et al. 2015 at two levels (two 3×3 convolutions a level, max pooling
  down, a 2×2 stride-2 transposed convolution up, the skip connections concatenated on the
  channels), one level up by bilinear ``Resize`` instead (the other common decoder), padded
  convolutions (the output the input's size), a 1×1 convolution to the classes per pixel.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _divisible(v: float, d: int = 8) -> int:
    # torchvision's _make_divisible: the nearest multiple of d, never 10 % below v
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


class _ConvBNReLU6(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1):
        super().__init__(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups,
                                   bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6())


class _InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, t: int):
        super().__init__()
        hidden = cin * t
        layers = [] if t == 1 else [_ConvBNReLU6(cin, hidden, 1)]
        layers += [_ConvBNReLU6(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    # (t, c, n, s) of the paper's Table 2
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, width: float = 0.25, classes: int = 10, last: int = 1280):
        super().__init__()
        c = _divisible(32 * width)
        layers: list[nn.Module] = [_ConvBNReLU6(3, c, 3, 2)]
        for t, channels, n, s in self.SETTINGS:
            out = _divisible(channels * width)
            for i in range(n):
                layers.append(_InvertedResidual(c, out, s if i == 0 else 1, t))
                c = out
        layers.append(_ConvBNReLU6(c, last, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet18(nn.Module):
    def __init__(self, base: int = 16, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, base, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(base), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, c = [], base
        for stage, width in enumerate([base, 2 * base, 4 * base, 8 * base]):
            for j in range(2):
                blocks.append(_BasicBlock(c, width, 2 if stage > 0 and j == 0 else 1))
                c = width
        self.layers = nn.Sequential(*blocks)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.avgpool(self.layers(self.stem(x))), 1))


class _Attention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)      # fused: one projection, split in three
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        split = lambda z: z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)  # noqa
        q, k, v = split(q), split(k), split(v)
        a = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, t, d))


class _EncoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, hidden: int):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(d), _Attention(d, heads)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, side: int = 16, patch: int = 4, d: int = 32, heads: int = 4,
                 depth: int = 2, hidden: int = 64, classes: int = 10):
        super().__init__()
        self.embed = nn.Conv2d(3, d, patch, patch)
        self.pos = nn.Parameter(0.1 * torch.randn(1, (side // patch) ** 2, d))
        self.layers = nn.Sequential(*[_EncoderLayer(d, heads, hidden) for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.norm(self.layers(x)).mean(1))


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, 1, 1), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, c: int = 8, classes: int = 3):
        super().__init__()
        self.down1, self.down2 = _double_conv(3, c), _double_conv(c, 2 * c)
        self.bottom = _double_conv(2 * c, 4 * c)
        self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, 2)
        self.dec2 = _double_conv(4 * c, 2 * c)
        self.reduce = nn.Conv2d(2 * c, c, 1)
        self.dec1 = _double_conv(2 * c, c)
        self.out = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        a = self.down1(x)
        b = self.down2(F.max_pool2d(a, 2))
        m = self.bottom(F.max_pool2d(b, 2))
        y = self.dec2(torch.cat([self.up2(m), b], 1))
        y = F.interpolate(self.reduce(y), scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(self.dec1(torch.cat([y, a], 1)))


# name -> (constructor, the input's shape, the loss the import appends)
NETWORKS = {
    "mobilenet_v2": (MobileNetV2, (3, 32, 32), "ce"),
    "resnet18": (ResNet18, (3, 32, 32), "ce"),
    "vit": (ViT, (3, 16, 16), "ce"),
    "unet": (UNet, (3, 16, 16), "sqerr"),
}


def randomise_statistics(net: nn.Module, seed: int = 0) -> nn.Module:
    """Batch normalisation's scale, shift and running statistics away from (1, 0, 0, 1), as a
    trained network's are (and so no two layers' equal: PyTorch's exporter shares equal
    initializers)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
                n = m.weight.numel()
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(torch.rand(n, generator=g) - 0.5)
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.rand(n, generator=g) - 0.5)
                m.running_var.copy_(0.5 + 1.5 * torch.rand(n, generator=g))
    return net
