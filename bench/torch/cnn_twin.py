#!/usr/bin/python3
"""PyTorch twin of examples/cnn: the same network, batch and optimizer, to
time its training step next to tapegrad's.

    /usr/bin/python3 bench/torch/cnn_twin.py [--threads 2] [--reps 20] [--batch 64]
        times forward + cross-entropy + backward + Adam on batches of
        Fashion-MNIST's training images (Debian's dataset-fashion-mnist;
        random images when it is not installed); prints a ROW line.
    /usr/bin/python3 bench/torch/cnn_twin.py --eval out/cnn/model.safetensors
        the test accuracy of the weights `cnn` wrote, computed by PyTorch
        (to compare with the one cnn printed).

The network (examples/cnn/model.c): conv 1->16 5x5 pad 2, ReLU, max-pool 2;
conv 16->32 5x5 pad 2, ReLU, max-pool 2; flatten; linear 1568->10; mean
cross-entropy; Adam lr 2e-3 (betas 0.9, 0.999, eps 1e-8). Pixels / 255,
normalised with mean 0.2860 and deviation 0.3530 as the example does.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DIR = "/usr/share/datasets/fashion-mnist"
DATA = DIR + "/train-images-idx3-ubyte.gz"
MEAN, STD = 0.2860, 0.3530


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 5, padding=2)
        self.fc = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):                                   # [B, 1, 28, 28]
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)          # [B, 16, 14, 14]
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)          # [B, 32, 7, 7]
        return self.fc(h.flatten(1))                        # [B, 10]


def images(n):
    """The first n training images, normalised, [n, 1, 28, 28]."""
    if os.path.exists(DATA):
        with gzip.open(DATA, "rb") as f:
            raw = np.frombuffer(f.read(16 + n * 784), dtype=np.uint8)[16:]
        x = torch.from_numpy(raw.astype(np.float32).reshape(n, 1, 28, 28) / 255)
    else:
        x = torch.rand(n, 1, 28, 28)
    return (x - MEAN) / STD


def load_weights(path):
    """A float32 safetensors file as a state_dict."""
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head, body = json.loads(b[8:8 + n]), b[8 + n:]
    return {k: torch.from_numpy(np.frombuffer(body[v["data_offsets"][0]:v["data_offsets"][1]], dtype=np.float32)
                                .reshape(v["shape"]).copy())
            for k, v in head.items() if k != "__metadata__"}


def test_accuracy(path):
    net = Net()
    net.load_state_dict(load_weights(path))
    with gzip.open(DIR + "/t10k-images-idx3-ubyte.gz", "rb") as f:
        x = np.frombuffer(f.read(), dtype=np.uint8)[16:].reshape(-1, 1, 28, 28)
    with gzip.open(DIR + "/t10k-labels-idx1-ubyte.gz", "rb") as f:
        y = torch.from_numpy(np.frombuffer(f.read(), dtype=np.uint8)[8:].astype(np.int64))
    x = (torch.from_numpy(x.astype(np.float32) / 255) - MEAN) / STD
    with torch.no_grad():
        right = sum((net(x[i:i + 500]).argmax(1) == y[i:i + 500]).sum().item() for i in range(0, len(y), 500))
    print(f"PyTorch on {path}: test accuracy {100 * right / len(y):.2f}% ({right} of {len(y)})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--eval", metavar="MODEL")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.eval:
        return test_accuracy(a.eval)
    torch.manual_seed(1)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    x = images(a.batch * 4)
    y = torch.randint(0, 10, (a.batch * 4,))
    times = []
    for k in range(a.reps + 5):
        i = (k % 4) * a.batch
        t0 = time.perf_counter()
        loss = F.cross_entropy(net(x[i:i + a.batch]), y[i:i + a.batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(1000 * (time.perf_counter() - t0))
    times = sorted(times[5:])  # the first 5 warm up, as the tapegrad row's
    print(f"ROW bench=cnn impl=torch tag=default B={a.batch} threads={a.threads} "
          f"ms={times[len(times) // 2]:.2f} min_ms={times[0]:.2f}")


if __name__ == "__main__":
    main()
