"""Shared pieces of the one-off training scripts of the bundled digits models (not package code).

Both models use scikit-learn's ``load_digits`` (UCI optdigits, CC BY 4.0) with one split: 360
stratified test images, ``random_state=0``, so the shipped test set serves both.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "src" / "nnisa" / "data"
SEED = 0


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, x_test, y_train, y_test): images scaled to [0, 1] as (N, 1, 8, 8) float32."""
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    y = d.target.astype(np.int64)
    return train_test_split(x, y, test_size=360, random_state=SEED, stratify=y)


def train(model: nn.Module, x: np.ndarray, y: np.ndarray, epochs: int) -> None:
    """Train ``model`` in place: Adam (lr 3e-3, weight decay 1e-4), cross-entropy, batches of 64."""
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(len(xt))
        for k in range(0, len(xt), 64):
            idx = perm[k: k + 64]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model.eval()


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """Top-1 accuracy of ``model`` on ``x``."""
    with torch.no_grad():
        return float((model(torch.from_numpy(x)).argmax(1).numpy() == y).mean())
