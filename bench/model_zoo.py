#!/usr/bin/env python3
"""The torchvision model zoo through snnc: every ReLU-family classification model in every format
today's PyTorch writes, converted by `snnc convert`, checked layer by layer against the format's own
runtime, and run as an SNN. Variants (--variants):
  pt2        torch.export.export + torch.export.save            (reference: torch)
  pt2_core   the same after run_decompositions() (Core ATen IR)  (reference: torch)
  onnx       torch.onnx.export(dynamo=True), the default exporter (reference: onnxruntime)
  onnx_ts    torch.onnx.export(dynamo=False), the TorchScript-based exporter
  scripted   torch.jit.script(...).save                          (reference: LibTorch)
  traced     torch.jit.trace(...).save

Weights are random (seeded), batch-norm statistics randomised so that folding is exercised, and the
labels of the check images are PyTorch's own argmax: a faithful ANN view scores 100 %. Models whose
activations cannot be spiking neurons (efficientnet: SiLU, mobilenet_v3: Hardswish) must be refused with
a message naming the activation and the module.

  --size tiny   (CI) the same torchvision model code with small widths (and one block per stage for the
                largest ResNets), inputs 3x64x64 (inception 3x96x96)
  --size full   the models as torchvision builds them, at --resolution 64 or 224

Prints one JSON object per model and variant (conversion time, the faithfulness figures, argmax
agreement, ANN accuracy via snnc, SNN synaptic operations per image) and a summary line; exits 1 if any
check fails. Needs torch, torchvision and h5py: the project's venv, .venv/bin/python (.ci/install-deps).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import h5py
import numpy as np
import torch
import torch.nn as nn
import torchvision.models as tvm
from torchvision.models import vgg as tv_vgg
from torchvision.models.resnet import Bottleneck, ResNet


def small_classifier(features, hidden=64, classes=10):
    # VGG/AlexNet's classifier (dropout, linear, relu, ...), narrower: the same ops, fewer parameters.
    return nn.Sequential(nn.Dropout(), nn.Linear(features, hidden), nn.ReLU(True), nn.Dropout(),
                         nn.Linear(hidden, hidden), nn.ReLU(True), nn.Linear(hidden, classes))


def tiny_vgg(cfg, bn):
    layers = [v if v == "M" else max(8, v // 8) for v in tv_vgg.cfgs[cfg]]
    m = tv_vgg.VGG(tv_vgg.make_layers(layers, batch_norm=bn), num_classes=10)
    m.classifier = small_classifier(layers[-2] * 7 * 7)
    return m


def tiny_alexnet():
    m = tvm.alexnet(num_classes=10)
    m.classifier = small_classifier(256 * 6 * 6)
    return m


class UNetClassifier(nn.Module):
    """A U-Net-style classifier (not in torchvision): encoder, nearest upsampling (nn.Upsample and
    F.interpolate), skip connections concatenated, a classifier head."""

    def __init__(self, width=8, classes=10):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True))

        self.enc1, self.enc2, self.enc3 = block(3, width), block(width, 2 * width), block(2 * width, 4 * width)
        self.pool = nn.MaxPool2d(2)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec2 = block(6 * width, 2 * width)
        self.dec1 = block(3 * width, width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up(e3), e2], 1))
        d1 = self.dec1(torch.cat([nn.functional.interpolate(d2, size=e1.shape[-2:], mode="nearest"), e1], 1))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(d1, 1), 1))


# name -> (tiny constructor, full constructor, smallest input side)
ZOO = {
    "alexnet": (tiny_alexnet, lambda: tvm.alexnet(), 64),
    "vgg11": (lambda: tiny_vgg("A", False), lambda: tvm.vgg11(), 64),
    "vgg11_bn": (lambda: tiny_vgg("A", True), lambda: tvm.vgg11_bn(), 64),
    "vgg16": (lambda: tiny_vgg("D", False), lambda: tvm.vgg16(), 64),
    "resnet18": (lambda: tvm.resnet18(num_classes=10), lambda: tvm.resnet18(), 64),
    "resnet50": (lambda: ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10), lambda: tvm.resnet50(), 64),
    "resnext50_32x4d": (lambda: ResNet(Bottleneck, [1, 1, 1, 1], groups=32, width_per_group=4, num_classes=10),
                        lambda: tvm.resnext50_32x4d(), 64),
    "wide_resnet50_2": (lambda: ResNet(Bottleneck, [1, 1, 1, 1], width_per_group=128, num_classes=10),
                        lambda: tvm.wide_resnet50_2(), 64),
    "densenet121": (lambda: tvm.densenet.DenseNet(8, (6, 12, 24, 16), 16, bn_size=2, num_classes=10),
                    lambda: tvm.densenet121(), 64),
    "squeezenet1_0": (lambda: tvm.squeezenet1_0(num_classes=10), lambda: tvm.squeezenet1_0(), 64),
    "squeezenet1_1": (lambda: tvm.squeezenet1_1(num_classes=10), lambda: tvm.squeezenet1_1(), 64),
    "shufflenet_v2_x0_5": (lambda: tvm.shufflenet_v2_x0_5(num_classes=10), lambda: tvm.shufflenet_v2_x0_5(), 64),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(width_mult=0.25, num_classes=10), lambda: tvm.mobilenet_v2(), 64),
    "mnasnet0_5": (lambda: tvm.mnasnet0_5(num_classes=10), lambda: tvm.mnasnet0_5(), 64),
    "regnet_x_400mf": (lambda: tvm.regnet_x_400mf(num_classes=10), lambda: tvm.regnet_x_400mf(), 64),
    "googlenet": (lambda: tvm.googlenet(num_classes=10, aux_logits=True, init_weights=False),
                  lambda: tvm.googlenet(aux_logits=True, init_weights=False), 64),
    "inception_v3": (lambda: tvm.inception_v3(num_classes=10, aux_logits=True, init_weights=False),
                     lambda: tvm.inception_v3(aux_logits=True, init_weights=False), 96),
    "unet_classifier": (lambda: UNetClassifier(), lambda: UNetClassifier(32, 1000), 64),
}
# Activations that are not ReLU-like: the conversion must fail naming them and where they are.
REFUSED = {
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(num_classes=10), "SiLU", "features.0"),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(num_classes=10), "Hardswish", "features.0"),
}


def randomise(model, seed):
    """Random weights and batch-norm statistics (the default running stats 0/1 would fold trivially)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
    return model.eval()


def logits(out):
    return out[0] if isinstance(out, tuple) else out


EXTENSIONS = {"scripted": ".pt", "traced": ".pt", "pt2": ".pt2", "pt2_core": ".pt2", "onnx": ".onnx", "onnx_ts": ".onnx"}


def save(model, variant, path, example):
    if variant == "scripted":
        torch.jit.script(model).save(path)
    elif variant == "traced":
        with torch.no_grad():
            torch.jit.trace(model, example, check_trace=False).save(path)
    elif variant in ("pt2", "pt2_core"):
        with torch.no_grad():
            program = torch.export.export(model, (example,))
            if variant == "pt2_core":
                program = program.run_decompositions()
        torch.export.save(program, path)
    elif variant in ("onnx", "onnx_ts"):
        import contextlib
        import io
        with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress lines
            torch.onnx.export(model, (example,), path, dynamo=variant == "onnx", external_data=False)
    else:
        raise ValueError(f"unknown variant {variant}")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def convert(snnc, pt, data, out, check_images):
    t0 = time.time()
    rc, so, se = run([snnc, "convert", pt, "-o", out, "--data", data, "--json", "--quiet",
                      "--check-images", str(check_images)])
    return rc, so, se, time.time() - t0


def one_model(args, name, make, side, work):
    torch.manual_seed(0)
    model = randomise(make(), 1)
    shape = (3, side, side)
    x = torch.randn((args.images,) + shape, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        labels = logits(model(x)).argmax(1).numpy()
    data = os.path.join(work, name + ".h5")
    with h5py.File(data, "w") as f:
        f["images"] = x.numpy().astype(np.float32)
        f["labels"] = labels.astype(np.int64)
    results = []
    for variant in args.variants:
        pt = os.path.join(work, f"{name}_{variant}{EXTENSIONS[variant]}")
        t0 = time.time()
        try:
            save(model, variant, pt, x[:2])
        except Exception as e:  # noqa: BLE001 - the exporter's own failure, not snnc's: reported apart
            r = {"model": name, "variant": variant, "input": list(shape), "ok": True, "exported": False,
                 "export_error": str(e).strip().splitlines()[0][:300]}
            results.append(r)
            print(json.dumps(r), flush=True)
            continue
        export_seconds = time.time() - t0
        snn = os.path.join(work, f"{name}_{variant}.snn.h5")
        rc, so, se, seconds = convert(args.snnc, pt, data, snn, args.check_images)
        r = {"model": name, "variant": variant, "input": list(shape), "export_seconds": round(export_seconds, 2),
             "convert_seconds": round(seconds, 2)}
        problems = []
        if rc != 0:
            problems.append("convert failed: " + se.strip()[-600:])
        else:
            j = json.loads(so)
            f = j["faithfulness"]
            r.update({"reference": f.get("reference", ""), "layers": j["layers"], "parameters": j["parameters"], "ann_macs_per_image": j["macs_per_image"],
                      "layers_checked": f["layers_checked"], "layers_unchecked": f["layers_unchecked"],
                      "worst_rel_diff": f["worst_rel_diff"], "worst_layer": f["worst_layer"],
                      "logits_rel_diff": f["output_rel_diff"],
                      "argmax_agree": f"{f['argmax_agree']}/{f['output_images']}"})
            if not f.get("checked", True):
                problems.append("not checked against a reference runtime: " + f.get("reason", ""))
            elif f["layers_unchecked"] > args.max_unchecked:
                problems.append(f"{f['layers_unchecked']} layers without a reference value")
            if f["argmax_agree"] != f["output_images"]:
                problems.append("argmax differs from PyTorch on some images")
            rc, so, se = run([args.snnc, "sweep", snn, "--data", data, "--T", str(args.timesteps), "--json", "--quiet",
                              "--limit", str(args.snn_images)])
            if rc != 0:
                problems.append("SNN run failed: " + se.strip()[-400:])
            else:
                s = json.loads(so)
                r.update({"ann_accuracy": s["ann_accuracy"], "snn_timesteps": s["timesteps"],
                          "synaptic_ops_per_image": s["synaptic_ops_per_image"],
                          "dense_macs_per_image": s["dense_macs_per_image"]})
                if s["ann_accuracy"] != 100.0:
                    problems.append(f"ANN view accuracy {s['ann_accuracy']} % on PyTorch's own labels")
        if not args.keep:
            for p in (pt, snn):
                if os.path.exists(p):
                    os.remove(p)
        r["ok"] = not problems
        if problems:
            r["problems"] = problems
        results.append(r)
        print(json.dumps(r), flush=True)
    if not args.keep:
        os.remove(data)
    return results


def refused(args, name, make, activation, module, work):
    model = randomise(make(), 1)
    x = torch.randn(2, 3, 64, 64)
    out = []
    for variant in args.variants:
        pt = os.path.join(work, f"{name}_{variant}{EXTENSIONS[variant]}")
        save(model, variant, pt, x)
        rc, so, se = run([args.snnc, "convert", pt, "-o", os.path.join(work, name + ".snn.h5"), "--input-shape",
                          "3,64,64", "--quiet"])
        ok = rc != 0 and activation.lower() in se.lower() and module in se and "retrain" in se
        r = {"model": name, "variant": variant, "refused": rc != 0, "message": se.strip()[:400], "ok": ok}
        print(json.dumps(r), flush=True)
        out.append(r)
        os.remove(pt)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snnc", required=True)
    ap.add_argument("--work", required=True, help="scratch folder")
    ap.add_argument("--size", choices=["tiny", "full"], default="tiny")
    ap.add_argument("--resolution", type=int, default=64, help="input side (full size); inception at least 96")
    ap.add_argument("--models", default="all", help="comma-separated names, or all")
    ap.add_argument("--variants", default="pt2,onnx,scripted,traced",
                    help="comma-separated: " + ", ".join(EXTENSIONS))
    ap.add_argument("--max-unchecked", type=int, default=0,
                    help="layers allowed without a reference value (folded or lazily made nodes)")
    ap.add_argument("--images", type=int, default=8, help="check images (labels = PyTorch's argmax)")
    ap.add_argument("--check-images", type=int, default=4, help="images for the layer-by-layer check")
    ap.add_argument("--snn-images", type=int, default=2)
    ap.add_argument("--timesteps", type=int, default=4)
    ap.add_argument("--keep", action="store_true", help="keep the model files")
    ap.add_argument("--no-refused", action="store_true", help="skip the models that must be refused")
    args = ap.parse_args()
    args.variants = args.variants.split(",")
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    names = list(ZOO) if args.models == "all" else args.models.split(",")
    results = []
    for name in names:
        if name in REFUSED:
            make, act, mod = REFUSED[name]
            results += refused(args, name, make, act, mod, args.work)
            continue
        tiny, full, min_side = ZOO[name]
        side = min_side if args.size == "tiny" else max(args.resolution, min_side)
        results += one_model(args, name, tiny if args.size == "tiny" else full, side, args.work)
    if args.models == "all" and not args.no_refused:
        for name, (make, act, mod) in REFUSED.items():
            results += refused(args, name, make, act, mod, args.work)
    failed = [f"{r['model']} ({r['variant']})" for r in results if not r["ok"]]
    not_exported = [f"{r['model']} ({r['variant']})" for r in results if r.get("exported") is False]
    print(json.dumps({"summary": True, "runs": len(results), "failed": failed, "torch_could_not_export": not_exported}))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
