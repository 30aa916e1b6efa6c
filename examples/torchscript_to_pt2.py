#!/usr/bin/env python3
"""The committed example models (TorchScript, examples/models/*.pt) as torch.export programs (.pt2): the
module is rebuilt from examples/train_cnn.py with the architecture recorded in the model's .json, the
TorchScript file's weights are loaded into it, and it is exported with torch.export (eval mode) on one
normalised Fashion-MNIST-shaped input; the .pt2's outputs must equal the TorchScript model's bit for bit
on 256 random inputs. The format PyTorch recommends since TorchScript's deprecation (2.11), which a pip
package of snnc reads without LibTorch.

    .venv/bin/python examples/torchscript_to_pt2.py examples/models/vgg_qcfs.pt examples/models/resnet_relu.pt
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_cnn import build_model  # noqa: E402


def convert(pt_path):
    with open(os.path.splitext(pt_path)[0] + ".json") as f:
        meta = json.load(f)
    model = build_model(meta["arch"], meta["act"], meta.get("levels") or 8, meta.get("pool") or "avg")
    scripted = torch.jit.load(pt_path).eval()
    model.load_state_dict(scripted.state_dict())
    model.eval()
    x = torch.randn(256, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        # A dynamic batch (snnc takes any), so that the program also runs on the 256 inputs below.
        program = torch.export.export(model, (x[:2],), dynamic_shapes=({0: torch.export.Dim("batch")},))
    out = os.path.splitext(pt_path)[0] + ".pt2"
    torch.export.save(program, out)
    loaded = torch.export.load(out).module()
    with torch.no_grad():
        want, got = scripted(x), loaded(x)
    assert torch.equal(want, got), f"{out}: differs from {pt_path} by {(want - got).abs().max().item()}"
    print(f"{out}: equal to {pt_path} on 256 inputs (torch {torch.__version__})")


if __name__ == "__main__":
    for path in sys.argv[1:] or ["examples/models/vgg_qcfs.pt", "examples/models/resnet_relu.pt"]:
        convert(path)
