#!/usr/bin/env python3
"""Train a small CNN on Fashion-MNIST and export it as TorchScript for snnc.

Architectures (input 1x28x28, 10 classes; BatchNorm after every conv):
  vgg    conv32-conv32-pool-conv64-conv64-pool-fc256-dropout-fc10
  resnet stem conv32, BasicBlock(32->32), BasicBlock(32->64,s2), BasicBlock(64->64,s2), GAP, fc10
  tiny   conv8-pool-conv16-pool-fc10 (used for the test fixture tests/fixtures/fmnist_tiny.pt)

Activations: relu (nn.ReLU modules; F.relu inside ResNet blocks) or qcfs (the
quantization-clip-floor-shift activation of Bu et al., ICLR 2022; snnc recognises
it by its class name `QCFS`, its scalar parameter `thresh` and its int attribute `L`).

The exported model takes the NORMALIZED input: x = (pixel/255 - mean) / std with
mean = 0.2860, std = 0.3530, computed in float32. Normalization is NOT part of
the model; mean/std are recorded in the JSON written next to the model.

Run with the project's venv (.ci/install-deps), which has torch:  .venv/bin/python examples/train_cnn.py --out m.pt
At the end one JSON line is printed on stdout and also written to <out without .pt>.json.
"""

import argparse
import gzip
import json
import math
import os
import shlex
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

FMNIST_MEAN = [0.2860]
FMNIST_STD = [0.3530]
DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"


def python_for_command():
    """The interpreter as the recorded command names it: relative when it is the repository's venv."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exe = os.path.abspath(sys.executable)
    return os.path.relpath(exe, root) if exe.startswith(root + os.sep) else exe


# --------------------------------------------------------------------------- data


def read_idx(path):
    """Read an IDX file (optionally gzip-compressed) into a numpy array (uint8 data)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (bad magic)")
    dtype_code, ndim = data[2], data[3]
    if dtype_code != 0x08:
        raise ValueError(f"{path}: only unsigned-byte IDX files are supported (type 0x{dtype_code:02x})")
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    count = int(np.prod(dims))
    if len(data) - offset != count:
        raise ValueError(f"{path}: size mismatch ({len(data) - offset} bytes for dims {dims})")
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims)


def _find(data_dir, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(f"{stem}(.gz) not found in {data_dir}")


def normalize(images_u8, mean=FMNIST_MEAN, std=FMNIST_STD):
    """uint8 [N,H,W] or [N,C,H,W] -> float32 [N,C,H,W], x = (u8/255 - mean)/std, all in float32."""
    x = torch.from_numpy(np.array(images_u8, copy=True))
    if x.dim() == 3:
        x = x.unsqueeze(1)
    x = x.to(torch.float32) / 255.0
    m = torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
    return (x - m) / s


def load_fmnist(data_dir, split):
    """split: 'train' or 't10k'. Returns (normalized float32 [N,1,28,28], int64 labels [N])."""
    imgs = read_idx(_find(data_dir, f"{split}-images-idx3-ubyte"))
    labels = read_idx(_find(data_dir, f"{split}-labels-idx1-ubyte"))
    if imgs.shape[0] != labels.shape[0]:
        raise ValueError("image/label count mismatch")
    return normalize(imgs), torch.from_numpy(labels.astype(np.int64))


# --------------------------------------------------------------------------- models

class QCFS(nn.Module):
    """Quantization-clip-floor-shift activation (Bu et al., ICLR 2022).

    y = thresh * floor(clamp(x / thresh, 0, 1) * L + 0.5) / L, floor with a straight-through gradient.
    """

    def __init__(self, levels: int = 8, thresh: float = 4.0):
        super().__init__()
        self.thresh = nn.Parameter(torch.tensor(float(thresh)))
        self.L = int(levels)

    def forward(self, x):
        x = x / self.thresh
        x = torch.clamp(x, 0, 1)
        y = x * self.L + 0.5
        y = y + (torch.floor(y) - y).detach()  # straight-through floor
        x = y / self.L
        return x * self.thresh


def make_act(act, levels, thresh=4.0):
    if act == "relu":
        return nn.ReLU()
    if act == "qcfs":
        return QCFS(levels, thresh)
    raise ValueError(f"unknown activation {act}")


def make_pool(pool):
    if pool == "avg":
        return nn.AvgPool2d(2)
    if pool == "max":
        return nn.MaxPool2d(2)
    raise ValueError(f"unknown pool {pool}")


class VGG(nn.Module):
    def __init__(self, act="qcfs", levels=8, pool="avg", num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), make_act(act, levels, 8.0),
            nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), make_act(act, levels),
            make_pool(pool),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), make_act(act, levels),
            nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), make_act(act, levels),
            make_pool(pool),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 256), make_act(act, levels),
            nn.Dropout(0.2),
            nn.Linear(256, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


class TinyCNN(nn.Module):
    def __init__(self, act="relu", levels=8, pool="avg", num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), make_act(act, levels),
            make_pool(pool),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), make_act(act, levels),
            make_pool(pool),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 7 * 7, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def _shortcut(cin, cout, stride):
    if stride == 1 and cin == cout:
        return nn.Sequential()  # identity (an empty Sequential scripts to a no-op)
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))


class BasicBlockReLU(nn.Module):
    """conv-BN-relu-conv-BN, + shortcut, relu (functional F.relu)."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = _shortcut(cin, cout, stride)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = out + self.shortcut(x)
        return F.relu(out)


class BasicBlockQCFS(nn.Module):
    """conv-BN-QCFS-conv-BN, + shortcut, QCFS (each activation its own submodule)."""

    def __init__(self, cin, cout, stride=1, levels=8):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.act1 = QCFS(levels, 4.0)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = _shortcut(cin, cout, stride)
        self.act2 = QCFS(levels, 4.0)

    def forward(self, x):
        out = self.act1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = out + self.shortcut(x)
        return self.act2(out)


class ResNet(nn.Module):
    def __init__(self, act="relu", levels=8, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.act1 = make_act(act, levels, 8.0)
        if act == "relu":
            blocks = [BasicBlockReLU(32, 32, 1), BasicBlockReLU(32, 64, 2), BasicBlockReLU(64, 64, 2)]
        else:
            blocks = [BasicBlockQCFS(32, 32, 1, levels), BasicBlockQCFS(32, 64, 2, levels),
                      BasicBlockQCFS(64, 64, 2, levels)]
        self.layer1, self.layer2, self.layer3 = blocks
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        x = self.pool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


def build_model(arch, act="qcfs", levels=8, pool="avg"):
    if arch == "vgg":
        return VGG(act, levels, pool)
    if arch == "resnet":
        return ResNet(act, levels)
    if arch == "tiny":
        return TinyCNN(act, levels, pool)
    raise ValueError(f"unknown arch {arch}")


# --------------------------------------------------------------------------- train / eval

@torch.no_grad()
def evaluate(model, x, y, batch_size=100):
    """Top-1 accuracy in percent (float32, eval mode)."""
    model.eval()
    correct = 0
    for i in range(0, x.shape[0], batch_size):
        logits = model(x[i:i + batch_size])
        correct += int((logits.argmax(1) == y[i:i + batch_size]).sum())
    return 100.0 * correct / x.shape[0]


def random_crop(xb, pad, gen):
    """Random crop with zero padding (in normalized space the pad value is that of a black pixel)."""
    if pad <= 0:
        return xb
    n, c, h, w = xb.shape
    fill = float((0.0 - FMNIST_MEAN[0]) / FMNIST_STD[0])
    padded = F.pad(xb, (pad, pad, pad, pad), value=fill)
    out = torch.empty_like(xb)
    offs = torch.randint(0, 2 * pad + 1, (n, 2), generator=gen)
    for i in range(n):
        dy, dx = int(offs[i, 0]), int(offs[i, 1])
        out[i] = padded[i, :, dy:dy + h, dx:dx + w]
    return out


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", choices=["vgg", "resnet", "tiny"], default="vgg")
    p.add_argument("--act", choices=["relu", "qcfs"], default="qcfs")
    p.add_argument("--levels", type=int, default=8, help="QCFS quantization levels L")
    p.add_argument("--pool", choices=["avg", "max"], default="avg", help="pooling (vgg, tiny)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--lr", type=float, default=None, help="default 0.05 (sgd) or 1e-3 (adam); cosine schedule")
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--augment", type=int, default=0, metavar="PAD",
                   help="random-crop augmentation with this zero padding (0 = off)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit-train", type=int, default=0, help="use only the first N training images")
    p.add_argument("--export", choices=["script", "trace"], default="script")
    p.add_argument("--out", required=True, help="output TorchScript file (.pt); JSON goes to the same name .json")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--threads", type=int, default=1)
    return p.parse_args(argv)


def run(argv=None):
    """Train, evaluate, export. Returns the result dict (also printed / written as JSON)."""
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    lr = args.lr if args.lr is not None else (0.05 if args.optimizer == "sgd" else 1e-3)

    x_train, y_train = load_fmnist(args.data_dir, "train")
    x_test, y_test = load_fmnist(args.data_dir, "t10k")
    if args.limit_train and args.limit_train > 0:
        x_train, y_train = x_train[:args.limit_train], y_train[:args.limit_train]
    n_train = x_train.shape[0]

    model = build_model(args.arch, args.act, args.levels, args.pool)
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=args.weight_decay,
                              nesterov=True)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=0.0)
    steps_per_epoch = math.ceil(n_train / args.batch_size)
    total_steps = max(1, args.epochs * steps_per_epoch)
    warmup = min(100, total_steps // 10)

    def lr_at(step):  # linear warm-up then cosine to 0, per step
        if step < warmup:
            return lr * (step + 1) / warmup
        return 0.5 * lr * (1 + math.cos(math.pi * (step - warmup) / max(1, total_steps - warmup)))

    log(f"train_cnn: arch={args.arch} act={args.act} L={args.levels} pool={args.pool} "
        f"epochs={args.epochs} n_train={n_train} batch={args.batch_size} opt={args.optimizer} lr={lr} "
        f"threads={args.threads}")
    t_start = time.time()
    epoch_seconds = []
    step = 0
    for epoch in range(args.epochs):
        model.train()
        t0 = time.time()
        perm = torch.randperm(n_train, generator=gen)
        loss_sum, correct, seen = 0.0, 0, 0
        for bi in range(steps_per_epoch):
            idx = perm[bi * args.batch_size:(bi + 1) * args.batch_size]
            xb, yb = x_train[idx], y_train[idx]
            if args.augment > 0:
                xb = random_crop(xb, args.augment, gen)
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            loss_sum += float(loss) * xb.shape[0]
            correct += int((logits.argmax(1) == yb).sum())
            seen += xb.shape[0]
            if (bi + 1) % 100 == 0:
                log(f"  epoch {epoch + 1} batch {bi + 1}/{steps_per_epoch} loss {loss_sum / seen:.4f} "
                    f"train_acc {100.0 * correct / seen:.2f} ({time.time() - t0:.0f}s)")
        dt = time.time() - t0
        epoch_seconds.append(dt)
        test_acc = evaluate(model, x_test, y_test)
        log(f"epoch {epoch + 1}/{args.epochs}: loss {loss_sum / max(1, seen):.4f} "
            f"train_acc {100.0 * correct / max(1, seen):.2f} test_acc {test_acc:.2f} time {dt:.1f}s")
    train_seconds = time.time() - t_start

    # ---- final evaluation and export (eval mode, cpu, float32)
    model.eval()
    model = model.cpu().float()
    test_acc = evaluate(model, x_test, y_test)
    if args.export == "script":
        ts = torch.jit.script(model)
    else:
        if args.act == "qcfs":
            log("warning: torch.jit.trace drops the int attribute L of QCFS modules (only parameters, buffers "
                "and submodules survive tracing); use --export script for QCFS models")
        ts = torch.jit.trace(model, x_test[:1].clone())
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    ts.save(args.out)

    loaded = torch.jit.load(args.out)
    loaded.eval()
    with torch.no_grad():
        ref = model(x_test[:256])
        got = loaded(x_test[:256])
    max_diff = float((ref - got).abs().max())
    assert max_diff < 1e-5, f"exported TorchScript differs from the eager model: max abs diff {max_diff}"
    ts_acc = evaluate(loaded, x_test, y_test)
    assert ts_acc == test_acc, f"TorchScript accuracy {ts_acc} != eager accuracy {test_acc}"

    qcfs = [{"name": n, "thresh": float(m.thresh.detach()), "L": int(m.L)}
            for n, m in model.named_modules() if isinstance(m, QCFS)]
    result = {
        "test_accuracy": test_acc,
        "arch": args.arch,
        "act": args.act,
        "levels": args.levels if args.act == "qcfs" else None,
        "pool": args.pool if args.arch != "resnet" else None,
        "epochs": args.epochs,
        "out": args.out,
        "mean": FMNIST_MEAN,
        "std": FMNIST_STD,
        "preprocessing": "x = (uint8 / 255 - mean[c]) / std[c] in float32; the model takes x",
        "input_shape": [1, 28, 28],
        "num_classes": 10,
        "dataset": "fashion-mnist",
        "test_images": int(x_test.shape[0]),
        "train_images": int(n_train),
        "train_seconds": train_seconds,
        "epoch_seconds": epoch_seconds,
        "export": args.export,
        "optimizer": args.optimizer,
        "lr": lr,
        "weight_decay": args.weight_decay,
        "batch_size": args.batch_size,
        "augment_pad": args.augment,
        "seed": args.seed,
        "threads": args.threads,
        "export_max_abs_diff": max_diff,
        "qcfs": qcfs,
        "torch_version": torch.__version__,
        "command": shlex.join([python_for_command(), "examples/train_cnn.py"]
                              + (list(argv) if argv is not None else sys.argv[1:])),
    }
    json_path = os.path.splitext(args.out)[0] + ".json"
    with open(json_path, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(result), flush=True)
    log(f"saved {args.out} and {json_path}: test_accuracy {test_acc:.2f}% "
        f"(train {train_seconds:.0f}s, export max diff {max_diff:.2e})")
    return result


if __name__ == "__main__":
    run()
