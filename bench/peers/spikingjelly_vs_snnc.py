#!/usr/bin/env python3
"""snnc against SpikingJelly 2.0's ann2snn on the same trained CNNs (issue 33, part 1).

One command regenerates the JSON and the markdown table:

    .venv/bin/python bench/peers/spikingjelly_vs_snnc.py --out bench/peers/results.json

Models
  vgg       examples/models/vgg_qcfs.pt (QCFS, TorchScript; nn.Module rebuilt from examples/train_cnn.py)
  resnet    examples/models/resnet_relu.pt (ReLU; F.relu inside the blocks)
  resnet18  torchvision ResNet-18 (10 classes) on Fashion-MNIST resized to 64x64 (bilinear) and
            replicated to 3 channels, trained here briefly on the CPU with a fixed seed; weights cached
            under --work (git-ignored), exported with torch.export for snnc.

For each model and each of SpikingJelly's threshold modes ('max', '99.9%', 1/2, 1/3, 1/4, 1/5 of the max:
RateCodingRecipe(dataloader, mode), its documented ReLU -> IFNode(v_reset=None) conversion, calibration
images in batches of 100 as in its examples) the accuracy at every t <= T, against
  snnc matched:  --spikes binary --reset subtract --v-init 0 with --norm max / --norm percentile
                 --percentile 99.9 (SpikingJelly's soft-reset IF neurons, membrane starting at 0);
  snnc defaults: snnc convert with no neuron/threshold flags, snnc calibrate (default method) for T,
                 snnc sweep (and the same with --spikes binary, for a like-for-like neuron).
The same calibration images (the first --calib-limit of the training set) and test images (the first
--test-limit of the test set) on both sides. Then CPU throughput (image-timesteps/s) of SpikingJelly's
SNN against snnc sweep, same images, batch, T and threads, A/B interleaved.

Everything printed on stdout at the end is the JSON (also written to --out); the markdown table goes to
--md (default: --out with .md). Progress goes to stderr.
"""

import argparse
import copy
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import train_cnn as tc  # noqa: E402  (the examples' model classes and Fashion-MNIST reader)

MEAN, STD = 0.2860, 0.3530
SJ_MODES = ["max", "99.9%", 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 5]
SJ_MODE_NAMES = ["max", "99.9%", "1/2", "1/3", "1/4", "1/5"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- data

def fmnist_u8(split):
    d = tc.DEFAULT_DATA_DIR
    return tc.read_idx(tc._find(d, f"{split}-images-idx3-ubyte")), \
        tc.read_idx(tc._find(d, f"{split}-labels-idx1-ubyte")).astype(np.int64)


def to64x3_u8(u8):
    """uint8 [N,28,28] -> uint8 [N,3,64,64]: bilinear resize, rounded, replicated to 3 channels."""
    out = []
    for i in range(0, len(u8), 2000):
        x = torch.from_numpy(np.array(u8[i:i + 2000], dtype=np.float32)).unsqueeze(1)
        x = F.interpolate(x, size=(64, 64), mode="bilinear", align_corners=False)
        out.append(x.round().clamp(0, 255).to(torch.uint8).repeat(1, 3, 1, 1))
    return torch.cat(out).numpy()


def normalize(u8):
    x = torch.from_numpy(np.array(u8, copy=True))
    if x.dim() == 3:
        x = x.unsqueeze(1)
    return (x.to(torch.float32) / 255.0 - MEAN) / STD


def write_h5(path, u8, labels):
    import h5py
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        f.create_dataset("images", data=u8)
        f.create_dataset("labels", data=labels.astype(np.int64))
    os.replace(tmp, path)


# --------------------------------------------------------------------------- models

class BasicBlockModules(nn.Module):
    """The examples' BasicBlockReLU with its two F.relu calls as nn.ReLU modules (same weights, same
    function): SpikingJelly's RateCodingRecipe only converts nn.ReLU *modules*."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = tc._shortcut(cin, cout, stride)
        self.relu2 = nn.ReLU()

    def forward(self, x):
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu2(out + self.shortcut(x))


def resnet_with_relu_modules():
    m = tc.ResNet("relu")
    m.layer1, m.layer2, m.layer3 = BasicBlockModules(32, 32, 1), BasicBlockModules(32, 64, 2), \
        BasicBlockModules(64, 64, 2)
    return m


def qcfs_to_relu(m):
    for name, child in m.named_children():
        if type(child).__name__ == "QCFS":
            setattr(m, name, nn.ReLU())
        else:
            qcfs_to_relu(child)
    return m


@torch.no_grad()
def ann_accuracy(model, x, y, batch=500):
    model.eval()
    correct = 0
    for i in range(0, len(x), batch):
        correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return 100.0 * correct / len(x)


def train_resnet18(work, steps, batch, seed):
    """torchvision ResNet-18 (10 classes) on 3x64x64 Fashion-MNIST, `steps` SGD steps, cached."""
    import torchvision
    path = os.path.join(work, f"resnet18_fmnist64_s{steps}_b{batch}_seed{seed}.pt")
    model = torchvision.models.resnet18(num_classes=10)
    info_path = path[:-3] + ".json"
    if os.path.exists(path) and os.path.exists(info_path):
        model.load_state_dict(torch.load(path, weights_only=True))
        with open(info_path) as f:
            return model.eval(), json.load(f)
    log(f"training ResNet-18 at 3x64x64: {steps} steps of {batch} (seed {seed}); cached at {path}")
    torch.manual_seed(seed)
    u8, labels = fmnist_u8("train")
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(u8), generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=steps, pct_start=0.15)
    model.train()
    t0 = time.time()
    for s in range(steps):
        idx = order[(s * batch) % len(u8):][:batch].numpy()
        xb = normalize(to64x3_u8(u8[idx]))
        yb = torch.from_numpy(labels[idx])
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        sched.step()
        if s % 50 == 0:
            log(f"  step {s}/{steps} loss {loss.item():.3f} ({time.time() - t0:.0f} s)")
    model.eval()
    info = {"train_steps": steps, "train_batch": batch, "train_images_seen": steps * batch, "seed": seed,
            "optimizer": "SGD nesterov momentum 0.9, OneCycle max lr 0.05, weight decay 5e-4",
            "train_seconds": round(time.time() - t0, 1), "torch": torch.__version__,
            "input": "Fashion-MNIST 28x28 -> 64x64 bilinear (rounded to uint8), replicated to 3 channels, "
                     "x = (u8/255 - 0.2860)/0.3530"}
    torch.save(model.state_dict(), path)
    with open(info_path, "w") as f:
        json.dump(info, f, indent=1)
    return model, info


# --------------------------------------------------------------------------- SpikingJelly

def sj_convert(ann, calib_x, mode, batch=100):
    from spikingjelly.activation_based import ann2snn
    loader = [(calib_x[i:i + batch], None) for i in range(0, len(calib_x), batch)]
    recipe = ann2snn.RateCodingRecipe(dataloader=loader, mode=mode)
    import contextlib
    import io
    with contextlib.redirect_stderr(io.StringIO()):  # its tqdm bar
        return ann2snn.Converter(recipe).convert(copy.deepcopy(ann)).eval()


def count_if_nodes(snn):
    from spikingjelly.activation_based import neuron
    return sum(isinstance(m, neuron.IFNode) for m in snn.modules())


@torch.no_grad()
def sj_run(snn, x, T, batch, step_mode, y=None):
    """Accuracy per t (running sum of the readout, argmax) as SpikingJelly's own example computes it."""
    from spikingjelly.activation_based import functional
    functional.set_step_mode(snn, step_mode)
    correct = np.zeros(T)
    for i in range(0, len(x), batch):
        xb = x[i:i + batch]
        functional.reset_net(snn)
        if step_mode == "m":
            out = snn(xb.unsqueeze(0).expand(T, *xb.shape).contiguous()).cumsum(0)  # [T, B, classes]
            pred = out.argmax(-1)
        else:
            acc = None
            preds = []
            for _ in range(T):
                o = snn(xb)
                acc = o if acc is None else acc + o
                preds.append(acc.argmax(1))
            pred = torch.stack(preds)
        if y is not None:
            correct += (pred == y[i:i + batch].unsqueeze(0)).sum(1).numpy()
    functional.set_step_mode(snn, "s")
    return 100.0 * correct / len(x) if y is not None else None


# --------------------------------------------------------------------------- snnc

def snnc(args, *cmd, json_out=True):
    full = [args.snnc, *cmd] + (["--json"] if json_out else []) + ["-q"]
    t0 = time.time()
    p = subprocess.run(full, capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(full)} failed ({p.returncode}): {p.stderr[-2000:]}")
    out = json.loads(p.stdout) if json_out else None
    return out, wall


def snnc_sweep(args, model, data, T, limit, batch):
    r, wall = snnc(args, "sweep", model, "--data", data, "--T", str(T), "--limit", str(limit),
                   "--threads", str(args.threads), "--batch-size", str(batch))
    return r, wall


# --------------------------------------------------------------------------- one model

def run_model(args, name, spec, results):
    T = args.T
    work = args.work
    rec = {"model": name, "description": spec["description"], "T": T}
    x_cal, x_test, y_test = spec["x_cal"], spec["x_test"], spec["y_test"]
    rec["calibration_images"] = f"first {len(x_cal)} of the training set"
    rec["test_images"] = f"first {len(x_test)} of the test set"
    rec["ann_accuracy"] = ann_accuracy(spec["ann"], x_test, y_test)
    log(f"[{name}] CNN accuracy {rec['ann_accuracy']:.2f} % on {len(x_test)} test images")

    # --- SpikingJelly on the model as given
    sj = {"as_given": None, "modified": spec.get("sj_modification"), "modes": {}}
    try:
        snn = sj_convert(spec["ann"], x_cal[:args.sj_calib_batch], "max", args.sj_calib_batch)
        n = count_if_nodes(snn)
        sj["as_given"] = {"converted": True, "if_layers": n, "neuron_layers_in_cnn": spec["neuron_layers"]}
        if n < spec["neuron_layers"]:
            sj["as_given"]["note"] = (f"only {n} of {spec['neuron_layers']} activations became IF neurons "
                                      "(RateCodingRecipe matches nn.ReLU modules only); the rest stay analog")
    except Exception as e:  # noqa: BLE001 - record SpikingJelly's own error
        sj["as_given"] = {"converted": False, "error": f"{type(e).__name__}: {e}"}
    log(f"[{name}] SpikingJelly on the model as given: {sj['as_given']}")
    sj_ann = spec["sj_ann"]
    if sj_ann is not spec["ann"]:
        sj["modified_ann_accuracy"] = ann_accuracy(sj_ann, x_test, y_test)
        log(f"[{name}] SpikingJelly's input CNN ({spec['sj_modification']}): {sj['modified_ann_accuracy']:.2f} %")

    # step mode: the faster documented one, measured on one batch
    snn = sj_convert(sj_ann, x_cal, "max", args.sj_calib_batch)
    sj["if_layers"] = count_if_nodes(snn)
    probe = x_test[:args.bench_batch]
    speeds = {}
    for sm in ("s", "m"):
        try:
            sj_run(snn, probe[:8], 2, 8, sm)
            t0 = time.time()
            sj_run(snn, probe, T, args.bench_batch, sm)
            speeds[sm] = len(probe) * T / (time.time() - t0)
        except Exception as e:  # noqa: BLE001
            speeds[sm] = f"failed: {type(e).__name__}: {e}"
    numeric = {k: v for k, v in speeds.items() if isinstance(v, float)}
    step_mode = max(numeric, key=numeric.get)
    sj["step_mode_probe_image_timesteps_per_s"] = speeds
    sj["step_mode"] = step_mode
    log(f"[{name}] SpikingJelly step modes {speeds}: using '{step_mode}'")

    for mode, mname in zip(SJ_MODES, SJ_MODE_NAMES):
        t0 = time.time()
        snn = sj_convert(sj_ann, x_cal, mode, args.sj_calib_batch)
        acc = sj_run(snn, x_test, T, args.batch, step_mode, y_test)
        sj["modes"][mname] = {"accuracy": [round(a, 3) for a in acc], "seconds": round(time.time() - t0, 1)}
        log(f"[{name}] SJ {mname:>6}: t=1 {acc[0]:.2f} t=8 {acc[min(7, T - 1)]:.2f} t={T} {acc[-1]:.2f}"
            f" ({time.time() - t0:.0f} s)")
    rec["spikingjelly"] = sj

    # --- snnc
    sn = {}
    common = ["--data", spec["calib_data"], "--limit", str(len(x_cal)), "--mean", *spec["mean"],
              "--std", *spec["std"], "--threads", str(args.threads)]
    paths = {}

    def convert(key, model_file, extra, calibrate=False):
        out = os.path.join(work, f"{name}.{key}.snn.h5")
        c, _ = snnc(args, "convert", model_file, "-o", out, *common, *extra)
        if calibrate:
            cal = os.path.join(work, f"{name}.{key}.cal.snn.h5")
            k, _ = snnc(args, "calibrate", out, "-o", cal, "--data", spec["calib_data"], "--T", str(T),
                        "--limit", str(len(x_cal)), "--threads", str(args.threads))
            out = cal
        s, wall = snnc_sweep(args, out, spec["test_data"], T, len(x_test), args.batch)
        paths[key] = out
        sn[key] = {"accuracy": [round(a, 3) for a in s["accuracy"]], "ann_accuracy": s["ann_accuracy"],
                   "neuron": c.get("neuron"), "norm": c.get("norm"), "firing_rate": s.get("firing_rate"),
                   "flags": " ".join(extra) + (f" + calibrate --T {T} (default method, --limit {len(x_cal)})"
                                                       if calibrate else ""),
                   "calibration": {x: k.get(x) for x in ("method", "seconds", "images")} if calibrate else None}
        log(f"[{name}] snnc {key:>16}: t=1 {s['accuracy'][0]:.2f} t=8 {s['accuracy'][min(7, T - 1)]:.2f} "
            f"t={T} {s['accuracy'][-1]:.2f} (CNN {s['ann_accuracy']:.2f}; {c.get('neuron')})")

    matched = ["--reset", "subtract", "--spikes", "binary", "--v-init", "0"]
    mf = spec["snnc_matched_file"]
    convert("matched-max", mf, matched + ["--norm", "max"])
    convert("matched-99.9", mf, matched + ["--norm", "percentile", "--percentile", "99.9"])
    convert("defaults", spec["file"], [], calibrate=True)
    if not args.no_defaults_binary:
        convert("defaults-binary", spec["file"], ["--spikes", "binary"], calibrate=True)
    if mf != spec["file"]:
        sn["matched_model_note"] = spec["snnc_matched_note"]
    rec["snnc"] = sn

    # --- goal: snnc defaults >= best SJ mode at every t
    best_sj = np.max([sj["modes"][m]["accuracy"] for m in SJ_MODE_NAMES], axis=0)
    d = np.array(sn["defaults"]["accuracy"]) - best_sj
    rec["defaults_minus_best_sj"] = [round(v, 3) for v in d]
    rec["goal_accuracy_met"] = bool((d >= 0).all())
    rec["worst_t"] = int(np.argmin(d)) + 1

    # --- throughput, A/B interleaved
    if args.bench_images > 0:
        rec["throughput"] = throughput(args, name, spec, sj_ann, x_cal, step_mode, paths)
    results["models"][name] = rec
    return rec


def throughput(args, name, spec, sj_ann, x_cal, step_mode, paths):
    n = min(args.bench_images_for.get(name, args.bench_images), len(spec["x_test"]))
    T, B = args.T, min(args.bench_batch, n)
    x = spec["x_test"][:n]
    snn = sj_convert(sj_ann, x_cal, "max", args.sj_calib_batch)
    sj_run(snn, x[:B], T, B, step_mode)  # warm-up
    runs = {"spikingjelly": [], "snnc_matched_max": [], "snnc_defaults": []}
    walls = {"snnc_matched_max": [], "snnc_defaults": []}
    for r in range(args.repeats):
        t0 = time.time()
        sj_run(snn, x, T, B, step_mode)
        runs["spikingjelly"].append(n * T / (time.time() - t0))
        for key, p in (("snnc_matched_max", paths["matched-max"]), ("snnc_defaults", paths["defaults"])):
            s, wall = snnc_sweep(args, p, spec["test_data"], T, n, B)
            runs[key].append(s["image_timesteps_per_second"])
            walls[key].append(round(wall, 2))
        log(f"[{name}] throughput round {r + 1}: " +
            ", ".join(f"{k} {v[-1]:.0f}" for k, v in runs.items()))
    med = {k: float(np.median(v)) for k, v in runs.items()}
    return {"images": n, "batch": B, "T": T, "threads": args.threads, "repeats": args.repeats,
            "spikingjelly_step_mode": step_mode,
            "image_timesteps_per_s": {k: [round(v, 1) for v in vs] for k, vs in runs.items()},
            "median": {k: round(v, 1) for k, v in med.items()},
            "ratio_matched": round(med["snnc_matched_max"] / med["spikingjelly"], 2),
            "ratio_defaults": round(med["snnc_defaults"] / med["spikingjelly"], 2),
            "snnc_process_wall_s": walls,
            "what": "SpikingJelly: the 'max' SNN, time of all batches incl. reset_net, torch.set_num_threads("
                    f"{args.threads}); snnc: sweep --threads {args.threads} --batch-size {B}, its JSON "
                    "image_timesteps_per_second (prepare + simulation of every batch; the ANN pass and "
                    "file loading excluded; process wall times beside)"}


# --------------------------------------------------------------------------- models' specs

def specs(args, want):
    work = args.work
    out = {}
    tr_x, tr_y = tc.load_fmnist(tc.DEFAULT_DATA_DIR, "train")
    te_x, te_y = tc.load_fmnist(tc.DEFAULT_DATA_DIR, "t10k")
    x_cal = tr_x[:args.calib_limit]
    lim = lambda m: args.test_limit_for.get(m, args.test_limit)  # noqa: E731
    if "vgg" in want:
        vgg = tc.build_model("vgg", "qcfs")
        vgg.load_state_dict(torch.jit.load(os.path.join(ROOT, "examples/models/vgg_qcfs.pt")).state_dict())
        vgg.eval()
        relu_vgg = qcfs_to_relu(copy.deepcopy(vgg)).eval()
        # the same ReLU VGG for snnc's matched runs, so both sides convert one network
        relu_file = os.path.join(work, "vgg_relu_from_qcfs.pt2")
        torch.export.save(torch.export.export(relu_vgg, (x_cal[:2],)), relu_file)
        out["vgg"] = dict(description="examples VGG (vgg_qcfs.pt: QCFS L=8, avg pooling), 1x28x28",
                          ann=vgg, sj_ann=relu_vgg, neuron_layers=5,
                          sj_modification="QCFS modules replaced by nn.ReLU (same weights): SpikingJelly's "
                                          "RateCodingRecipe converts ReLU only and rejects the QCFS graph",
                          file=os.path.join(ROOT, "examples/models/vgg_qcfs.pt"),
                          snnc_matched_file=relu_file,
                          snnc_matched_note="matched runs convert the same ReLU VGG (QCFS -> ReLU, exported "
                                            "with torch.export) as SpikingJelly; defaults convert vgg_qcfs.pt",
                          x_cal=x_cal, x_test=te_x[:lim("vgg")], y_test=te_y[:lim("vgg")],
                          calib_data="fashion-mnist:train", test_data="fashion-mnist:test",
                          mean=[str(MEAN)], std=[str(STD)])
    if "resnet" in want:
        rn = tc.build_model("resnet", "relu")
        sd = torch.jit.load(os.path.join(ROOT, "examples/models/resnet_relu.pt")).state_dict()
        rn.load_state_dict(sd)
        rn.eval()
        rn_mod = resnet_with_relu_modules()
        rn_mod.load_state_dict(sd)
        rn_mod.eval()
        out["resnet"] = dict(description="examples ResNet (resnet_relu.pt: 3 BasicBlocks, F.relu), 1x28x28",
                             ann=rn, sj_ann=rn_mod, neuron_layers=7,
                             sj_modification="the blocks' F.relu calls as nn.ReLU modules (same weights, same "
                                             "function): RateCodingRecipe converts nn.ReLU modules only",
                             file=os.path.join(ROOT, "examples/models/resnet_relu.pt"),
                             snnc_matched_file=os.path.join(ROOT, "examples/models/resnet_relu.pt"),
                             x_cal=x_cal, x_test=te_x[:lim("resnet")], y_test=te_y[:lim("resnet")],
                             calib_data="fashion-mnist:train", test_data="fashion-mnist:test",
                             mean=[str(MEAN)], std=[str(STD)])
    if "resnet18" in want:
        model, info = train_resnet18(work, args.r18_steps, args.r18_batch, 0)
        n_test = lim("resnet18")
        tr_u8, tr_lab = fmnist_u8("train")
        te_u8, te_lab = fmnist_u8("t10k")
        cal_h5 = os.path.join(work, f"fmnist64_train_first{args.calib_limit}.h5")
        te_h5 = os.path.join(work, f"fmnist64_test_first{n_test}.h5")
        if not os.path.exists(cal_h5):
            write_h5(cal_h5, to64x3_u8(tr_u8[:args.calib_limit]), tr_lab[:args.calib_limit])
        if not os.path.exists(te_h5):
            write_h5(te_h5, to64x3_u8(te_u8[:n_test]), te_lab[:n_test])
        x_cal64 = normalize(to64x3_u8(tr_u8[:args.calib_limit]))
        x_te64 = normalize(to64x3_u8(te_u8[:n_test]))
        pt2 = os.path.join(work, f"resnet18_fmnist64_s{args.r18_steps}_b{args.r18_batch}_seed0.pt2")
        if not os.path.exists(pt2):
            torch.export.save(torch.export.export(model, (x_cal64[:2],)), pt2)
        out["resnet18"] = dict(description="torchvision ResNet-18 (10 classes), 3x64x64 Fashion-MNIST "
                                           f"(resized, replicated), trained here: {info['train_steps']} steps "
                                           f"x {info['train_batch']} images, seed 0",
                               train=info, ann=model, sj_ann=model, neuron_layers=17,
                               file=pt2, snnc_matched_file=pt2,
                               x_cal=x_cal64, x_test=x_te64, y_test=torch.from_numpy(te_lab[:n_test]),
                               calib_data=cal_h5, test_data=te_h5,
                               mean=[",".join([str(MEAN)] * 3)], std=[",".join([str(STD)] * 3)])
    return out


# --------------------------------------------------------------------------- markdown

def markdown(res):
    T = res["config"]["T"]
    ts = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= T]
    lines = []
    for name, r in res["models"].items():
        sj, sn = r["spikingjelly"], r["snnc"]
        lines.append(f"**{name}** — {r['description']}; CNN {r['ann_accuracy']:.2f} % on {r['test_images']}"
                     + (f"; SpikingJelly's input CNN ({sj['modified']}): {sj['modified_ann_accuracy']:.2f} %"
                        if sj.get("modified_ann_accuracy") is not None else ""))
        lines.append("")
        lines.append("| method | spikes | " + " | ".join(f"t={t}" for t in ts) + " |")
        lines.append("|---|---|" + "---|" * len(ts))
        for m, v in sj["modes"].items():
            lines.append(f"| SpikingJelly `{m}` | binary | " +
                         " | ".join(f"{v['accuracy'][t - 1]:.2f}" for t in ts) + " |")
        labels = {"matched-max": ("snnc `--norm max` (matched)", "binary"),
                  "matched-99.9": ("snnc `--norm percentile --percentile 99.9` (matched)", "binary"),
                  "defaults": ("**snnc defaults + calibrate**", "signed"),
                  "defaults-binary": ("snnc defaults `--spikes binary` + calibrate", "binary")}
        for k, (lab, spk) in labels.items():
            if k in sn:
                lines.append(f"| {lab} | {spk} | " + " | ".join(f"{sn[k]['accuracy'][t - 1]:.2f}" for t in ts)
                             + " |")
        lines.append("")
        best = r["defaults_minus_best_sj"]
        lines.append(f"snnc defaults − best SpikingJelly mode, every t ≤ {T}: min {min(best):+.2f} pt "
                     f"(t = {r['worst_t']}); goal {'met' if r['goal_accuracy_met'] else 'NOT met'}.")
        if sj["as_given"] and not sj["as_given"].get("converted", True):
            lines.append(f"SpikingJelly on the model as given: `{sj['as_given']['error']}`.")
        elif sj["as_given"] and sj["as_given"].get("note"):
            lines.append(f"SpikingJelly on the model as given: {sj['as_given']['note']}.")
        th = r.get("throughput")
        if th:
            lines.append(f"Throughput (image·timesteps/s, T = {th['T']}, batch {th['batch']}, {th['images']} "
                         f"images, {th['threads']} threads, {th['repeats']} interleaved rounds, median): "
                         f"SpikingJelly ('{th['spikingjelly_step_mode']}' step mode) "
                         f"{th['median']['spikingjelly']:.0f}, snnc matched {th['median']['snnc_matched_max']:.0f}"
                         f" (**{th['ratio_matched']:.2f}×**), snnc defaults {th['median']['snnc_defaults']:.0f}"
                         f" ({th['ratio_defaults']:.2f}×).")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main

def parse_kv(s):
    out = {}
    for part in filter(None, (s or "").split(",")):
        k, v = part.split("=")
        out[k] = int(v)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--snnc", default=os.path.join(ROOT, "build/tools/snnc"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench/peers/results.json"))
    p.add_argument("--md", default=None, help="markdown table (default: --out with .md)")
    p.add_argument("--work", default=os.path.join(ROOT, "bench/peers/work"), help="cache (git-ignored)")
    p.add_argument("--models", default="vgg,resnet,resnet18")
    p.add_argument("--T", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=100, help="evaluation batch, both sides")
    p.add_argument("--calib-limit", type=int, default=1000, help="first N training images calibrate both sides")
    p.add_argument("--sj-calib-batch", type=int, default=100, help="SpikingJelly's calibration batch")
    p.add_argument("--test-limit", type=int, default=10000)
    p.add_argument("--test-limits", default="", help="per model, e.g. resnet18=1000")
    p.add_argument("--bench-images", type=int, default=256, help="throughput images (0: skip)")
    p.add_argument("--bench-images-per-model", default="", help="per model, e.g. resnet18=64")
    p.add_argument("--bench-batch", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-defaults-binary", action="store_true",
                   help="skip the extra snnc row (defaults with --spikes binary + calibrate)")
    p.add_argument("--merge", action="store_true",
                   help="keep the other models' results already in --out (rerun some models only)")
    p.add_argument("--r18-steps", type=int, default=100)
    p.add_argument("--r18-batch", type=int, default=64)
    args = p.parse_args()
    args.test_limit_for = parse_kv(args.test_limits)
    args.bench_images_for = parse_kv(args.bench_images_per_model)
    args.snnc = os.path.abspath(args.snnc)
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    import spikingjelly
    want = args.models.split(",")
    t_start = time.time()
    ver = subprocess.run([args.snnc, "--version"], capture_output=True, text=True).stdout.strip()
    res = {"benchmark": "spikingjelly_vs_snnc",
           "command": " ".join([os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT)
                                else sys.executable, os.path.relpath(os.path.abspath(__file__), ROOT)]
                               + sys.argv[1:]),
           "config": {k: v for k, v in vars(args).items() if k not in ("test_limit_for", "bench_images_for")},
           "versions": {"snnc": ver, "torch": torch.__version__,
                        "spikingjelly": getattr(spikingjelly, "__version__", "2.0.0"),
                        "python": platform.python_version()},
           "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
           "spikingjelly_conversion": "ann2snn.Converter(RateCodingRecipe(dataloader, mode)) — Conv-BN fused, "
                                      "each nn.ReLU -> VoltageScaler(1/s), IFNode(v_reset=None, v_threshold=1, "
                                      "membrane from 0), VoltageScaler(s); s = per-batch max / quantile / "
                                      "fraction of max, averaged over batches with momentum 0.1",
           "models": {}}
    res["config"]["snnc"] = os.path.relpath(args.snnc, ROOT) if args.snnc.startswith(ROOT) else args.snnc
    for k in ("out", "work", "md"):
        if res["config"][k]:
            res["config"][k] = os.path.relpath(os.path.abspath(res["config"][k]), ROOT)
    if args.merge and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        res["models"] = {k: v for k, v in old.get("models", {}).items() if k not in want}
        if "resnet18_training" in old and "resnet18" not in want:
            res["resnet18_training"] = old["resnet18_training"]
        res["merged_runs"] = old.get("merged_runs", [old.get("command")]) + [res["command"]]
    all_specs = specs(args, want)
    for name in want:
        spec = all_specs[name]
        if "train" in spec:
            res.setdefault("resnet18_training", spec["train"])
        run_model(args, name, spec, res)
        _write(args, res)
    res["seconds"] = round(time.time() - t_start, 1)
    res["goals"] = {
        "accuracy_defaults_ge_best_sj_every_t": {n: r["goal_accuracy_met"] for n, r in res["models"].items()},
        "throughput_vgg_ge_5x": (res["models"].get("vgg", {}).get("throughput", {}).get("ratio_matched", 0) >= 5)
        if "vgg" in res["models"] else None,
        "throughput_resnet18_ge_3x": (res["models"].get("resnet18", {}).get("throughput", {})
                                      .get("ratio_matched", 0) >= 3) if "resnet18" in res["models"] else None}
    _write(args, res)
    print(json.dumps(res, indent=1))


def _write(args, res):
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, args.out)
    md = args.md or os.path.splitext(args.out)[0] + ".md"
    with open(md + ".tmp", "w") as f:
        f.write(markdown(res) + "\n")
    os.replace(md + ".tmp", md)


if __name__ == "__main__":
    main()
