#!/usr/bin/env python3
"""The torchvision model zoo (bench/model_zoo.py's ZOO, tiny sizes) through snnc's native torch.export reader.

Each model (random weights, randomised batch-norm statistics, eval mode) is exported with
torch.export.export at batch 2 and saved twice: as exported (ATen training IR) and after
ep.run_decompositions() (Core ATen IR). Then the hidden Catch2 test "[.pt2zoo]" of model_import_tests
reads every file with read_exported_program and fails on any op left unmapped; the refused models
(efficientnet: SiLU, mobilenet_v3: Hardswish) must read with exactly that activation unmapped.

  /tmp/tv/bin/python bench/pt2_zoo.py --tests build-pt2/tests/conversion/model_import_tests [--out DIR]

Needs torch >= 2.6 (archives as torch.export.save writes them since) and torchvision.
"""
import argparse
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_zoo  # noqa: E402  (ZOO, REFUSED, randomise)


def export_one(name, make, side, out_dir):
    torch.manual_seed(0)
    model = model_zoo.randomise(make(), 1)
    x = torch.randn(2, 3, side, side, generator=torch.Generator().manual_seed(2))
    t0 = time.time()
    ep = torch.export.export(model, (x,))
    torch.export.save(ep, os.path.join(out_dir, f"{name}.plain.pt2"))
    torch.export.save(ep.run_decompositions(), os.path.join(out_dir, f"{name}.decomposed.pt2"))
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", required=True, help="the model_import_tests executable")
    ap.add_argument("--out", default="/tmp/snn-pt2-zoo", help="where the .pt2 files go")
    ap.add_argument("--models", default="", help="comma-separated subset of the zoo")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    wanted = set(filter(None, args.models.split(",")))
    models = {k: (v[0], v[2]) for k, v in model_zoo.ZOO.items()}
    models.update({k: (v[0], 64) for k, v in model_zoo.REFUSED.items()})
    for name, (make, side) in models.items():
        if wanted and name not in wanted:
            continue
        try:
            print(f"exported {name} in {export_one(name, make, side, args.out):.1f} s", flush=True)
        except Exception as e:  # an export failure is a torch limitation: report it, go on
            print(f"EXPORT FAILED {name}: {type(e).__name__}: {e}", flush=True)
    refused = ",".join(f"{k}={v[1]}" for k, v in model_zoo.REFUSED.items())
    env = dict(os.environ, SNN_PT2_ZOO_DIR=args.out, SNN_PT2_ZOO_REFUSED=refused)
    return subprocess.run([args.tests, "[.pt2zoo]"], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
