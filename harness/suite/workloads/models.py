"""The models the training and DDP workloads train (imports torch: only their builders import this)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


class SmallCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1),
            torch.nn.BatchNorm2d(32),
            torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, padding=1, stride=2),
            torch.nn.BatchNorm2d(64),
            torch.nn.ReLU(),
            torch.nn.Conv2d(64, 128, 3, padding=1, stride=2),
            torch.nn.BatchNorm2d(128),
            torch.nn.ReLU(),
            torch.nn.Conv2d(128, 128, 3, padding=1),
            torch.nn.BatchNorm2d(128),
            torch.nn.ReLU(),
        )
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.head(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))
        return logits


class TransformerBlock(torch.nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d))
        out: torch.Tensor = x + self.mlp(self.norm2(x))
        return out


class ConvNet(torch.nn.Module):
    """Four stages of two conv-BN-ReLU (64..512 channels, ~4.7 M parameters, ~19 MB of fp32 gradients)."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        layers: list[torch.nn.Module] = []
        cin = 3
        for stage in range(4):
            cout = width << stage
            for index in range(2):
                stride = 2 if index == 0 and stage > 0 else 1
                layers += [
                    torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                    torch.nn.BatchNorm2d(cout),
                    torch.nn.ReLU(inplace=True),
                ]
                cin = cout
        self.features = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(cin, 100)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.head(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))
        return logits
