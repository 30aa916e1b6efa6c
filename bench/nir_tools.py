#!/usr/bin/env python3
"""snnc's NIR export in snnTorch, Norse and Sinabs on every examples model (issue 33): the examples ResNet
(residual adds) and VGG (average pooling), converted for NIR (--reset zero --v-init 0), as converted and
light-calibrated (a bias folded); each exported, read (nir.read, bridged where needed), imported by each
tool's own NIR importer (with the bridges of tests/nir/nir_tools.py, listed in the output) and stepped T
times on N normalised Fashion-MNIST test images, against `snnc sweep`. Prints one JSON object (per model
and tool: accuracy gap over t, differing predictions against snnTorch, spike totals, ties, bridges,
known gaps as shipped); progress on stderr.

  .venv/bin/python bench/nir_tools.py --snnc build/tools/snnc [--T 32] [--n 200] [--work /tmp/nir_tools]
"""
import argparse, json, os, sys, time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests"))
sys.path.insert(0, os.path.join(here, "..", "tests", "nir"))
import torch  # noqa: E402
import nir_tools as nt  # noqa: E402
from script_util import FMNIST, run  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--snnc", required=True)
    ap.add_argument("--T", type=int, default=32)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--work", default="/tmp/nir_tools")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.makedirs(a.work, exist_ok=True)
    w = lambda f: os.path.join(a.work, f)
    repo = os.path.join(here, "..")
    data = ["--data", "fashion-mnist:train", "--limit", "512", "--mean", "0.2860", "--std", "0.3530", "-q"]
    models = {}
    for arch, pt in (("resnet", "resnet_relu.pt"), ("vgg", "vgg_qcfs.pt")):
        conv = w(f"{arch}.snn.h5")
        run([a.snnc, "convert", os.path.join(repo, "examples/models", pt), "-o", conv, "--reset", "zero",
             "--v-init", "0"] + data)
        light = w(f"{arch}_light.snn.h5")
        run([a.snnc, "calibrate", conv, "-o", light, "--method", "light", "--T", str(a.T), "--batches", "2",
             "--batch-size", "64", "-q"])
        models[arch] = conv
        models[f"{arch}_light"] = light
    out = {"T": a.T, "images": a.n, "threads": a.threads, "models": {}}
    for name, model in models.items():
        path = w(f"{name}.nir")
        run([a.snnc, "export", model, "-o", path])
        graph = nt.read_nir(path)
        meta = graph.nodes["input"].metadata
        images, labels = nt.test_images(FMNIST, a.n, meta["normalise_mean"], meta["normalise_std"])
        acc, spikes = nt.snnc_sweep(a.snnc, run, model, a.n, a.T, w(f"{name}_sweep.h5"))
        res, preds = {"snnc_accuracy": [float(v) for v in acc]}, {}
        for tool in nt.TOOLS:
            t0 = time.time()
            try:
                r = nt.compare(tool, path, acc, spikes, images, labels, a.T)
            except Exception as e:  # an importer that fails even with the bridges
                res[tool] = {"error": f"{type(e).__name__}: {e}"}
                print(f"{name} {tool}: {res[tool]['error']}", file=sys.stderr)
                continue
            preds[tool] = r.pop("preds")
            r["seconds"] = time.time() - t0
            r["differing_predictions_vs_snntorch"] = (int((preds[tool] != preds["snntorch"]).sum())
                                                      if "snntorch" in preds else None)
            res[tool] = r
            print(f"{name} {tool}: acc gap {r['max_acc_gap_pt']:.2f} pt, final {r['final_acc']:.1f} "
                  f"(snnc {r['snnc_final_acc']:.1f}), spike gap {r['max_rel_spike_gap']:.1e}, ties {r['ties']}, "
                  f"{r['seconds']:.0f} s", file=sys.stderr)
        out["models"][name] = res
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
