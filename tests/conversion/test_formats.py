"""`snnc convert` on models written by today's PyTorch, in every format it writes.

Two small CNNs (a QCFS VGG-style net whose activations carry their thresholds, and a ReLU ResNet-style
net with batch norms, a max pool, a residual sum and a channel concatenation) are exported by the
torch in this interpreter as torch.export programs (.pt2, also after run_decompositions), ONNX (the
dynamo exporter and the TorchScript-based one) and TorchScript, then converted by snnc. Each must be
checked layer by layer against its format's own runtime (torch / onnxruntime / LibTorch) and give
PyTorch's argmax on every check image; the formats must agree with each other; the format is found by
content; without a reference runtime the model converts and says it was not checked; an op with no
spiking counterpart is refused naming it, the node and the format.

Run by ctest: SNNC=path/to/snnc python -m pytest tests/conversion/test_formats.py
"""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from train_cnn import QCFS  # noqa: E402 - the QCFS activation the examples train with

SNNC = os.environ.get("SNNC", "snnc")
TORCHSCRIPT = os.environ.get("SNNC_TORCHSCRIPT", "1") == "1"  # 0: snnc built without LibTorch
VARIANTS = ["pt2", "pt2_core", "onnx", "onnx_ts", "scripted", "traced"]
EXT = {"pt2": ".pt2", "pt2_core": ".pt2", "onnx": ".onnx", "onnx_ts": ".onnx", "scripted": ".pt", "traced": ".pt"}
RUNTIME = {"pt2": "torch", "pt2_core": "torch", "onnx": "onnxruntime", "onnx_ts": "onnxruntime",
           "scripted": "LibTorch", "traced": "LibTorch"}


def qcfs_vgg():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), QCFS(4, 1.5), nn.AvgPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), QCFS(8, 2.0), nn.AvgPool2d(2),
                         nn.Flatten(), nn.Linear(16 * 3 * 3, 10))


class ResNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.branch = nn.Conv2d(8, 4, 1)
        self.head = nn.Linear(12, 10)

    def forward(self, x):
        x = self.pool(self.stem(x))
        y = torch.relu(self.bn1(self.conv1(x)))
        x = nn.functional.relu(self.bn2(self.conv2(y)) + x)
        x = torch.cat([x, nn.functional.relu6(self.branch(x))], 1)
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Sigmoidal(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 10 * 10, 10)

    def forward(self, x):
        return self.fc(torch.flatten(torch.sigmoid(self.conv(x)), 1))


def randomised(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
    return model.eval()


def export(model, variant, path, example):
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
        if variant == "scripted":
            torch.jit.script(model).save(path)
        elif variant == "traced":
            torch.jit.trace(model, example).save(path)
        elif variant.startswith("pt2"):
            program = torch.export.export(model, (example,))
            if variant == "pt2_core":
                program = program.run_decompositions()
            torch.export.save(program, path)
        else:
            torch.onnx.export(model, (example,), path, dynamo=variant == "onnx", external_data=False)


def snnc(*args, env=None):
    return subprocess.run([SNNC, *args], capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("formats")


@pytest.fixture(scope="module")
def models(work):
    torch.manual_seed(0)
    x = torch.randn(32, 1, 12, 12, generator=torch.Generator().manual_seed(1))
    out = {}
    for name, make in (("qcfs_vgg", qcfs_vgg), ("resnetish", ResNetish)):
        m = randomised(make(), 2)
        with torch.no_grad():
            labels = m(x).argmax(1).numpy()
        data = work / f"{name}.h5"
        with h5py.File(data, "w") as f:
            f["images"] = x.numpy()
            f["labels"] = labels.astype(np.int64)
        files = {}
        for v in VARIANTS:
            path = work / f"{name}_{v}{EXT[v]}"
            export(m, v, str(path), x[:2])
            files[v] = path
        out[name] = (m, data, files)
    return out


def convert(model_file, data, out, env=None, extra=()):
    if not TORCHSCRIPT and str(model_file).endswith(".pt"):  # only the content counts, but these are TorchScript
        r = snnc("convert", str(model_file), "-o", str(out), "--data", str(data), env=env)
        assert r.returncode == 1 and "without LibTorch" in r.stderr, r.stderr
        pytest.skip("snnc is built without LibTorch: TorchScript is refused, as checked")
    r = snnc("convert", str(model_file), "-o", str(out), "--data", str(data), "--json", "--quiet", *extra, env=env)
    return r, (json.loads(r.stdout) if r.returncode == 0 else None)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", ["qcfs_vgg", "resnetish"])
def test_every_format_converts_faithfully(models, work, name, variant):
    _, data, files = models[name]
    out = work / f"{name}_{variant}.snn.h5"
    r, j = convert(files[variant], data, out)
    if name == "qcfs_vgg" and variant == "traced":  # a trace keeps parameters, not QCFS's int L
        assert r.returncode == 1 and "torch.jit.script" in r.stderr, r.stderr
        return
    assert r.returncode == 0, r.stderr
    f = j["faithfulness"]
    assert f["checked"] and f["passed"], f
    assert f["reference"].startswith(RUNTIME[variant]), f["reference"]
    assert f["layers_checked"] >= j["layers"] - 1, f
    assert f["layers_unchecked"] == 0, [l for l in f["layers"] if not l["checked"]]
    assert f["argmax_agree"] == f["output_images"] == 32
    # The ANN view, run by snnc, gives PyTorch's own labels.
    e = snnc("sweep", str(out), "--data", str(data), "--T", "2", "--json", "--quiet")
    assert e.returncode == 0, e.stderr
    assert json.loads(e.stdout)["ann_accuracy"] == 100.0


def test_formats_give_the_same_network(models, work):
    _, data, files = models["qcfs_vgg"]
    thresholds = {}
    for v in [v for v in VARIANTS if v != "traced" and (TORCHSCRIPT or v != "scripted")]:
        r, j = convert(files[v], data, work / f"same_{v}.snn.h5")
        assert r.returncode == 0, r.stderr
        thresholds[v] = [(t["activation"], t["levels"], t["threshold"]) for t in j["thresholds"]]
    assert thresholds["pt2"] == [("qcfs", 4, [1.5]), ("qcfs", 8, [2.0])]
    for v in thresholds:
        assert thresholds[v] == thresholds["pt2"], v


def test_format_is_recognised_by_content(models, work):
    _, data, files = models["resnetish"]
    disguised = {"onnx": work / "onnx_named.pt2", "pt2": work / "pt2_named.onnx"}
    if TORCHSCRIPT:
        disguised["scripted"] = work / "ts_named.onnx"
    for v, path in disguised.items():
        shutil.copy(files[v], path)
        r, j = convert(path, data, work / f"disguised_{v}.snn.h5")
        assert r.returncode == 0, r.stderr
        assert j["format"] == {"onnx": "ONNX", "pt2": "torch.export (.pt2)", "scripted": "TorchScript"}[v]


def test_without_a_reference_runtime_it_converts_and_says_so(models, work):
    _, data, files = models["resnetish"]
    env = dict(os.environ, SNNC_PYTHON="/nonexistent/python3")
    for v in ("pt2", "onnx"):
        out = work / f"unchecked_{v}.snn.h5"
        r, j = convert(files[v], data, out, env=env)
        assert r.returncode == 0, r.stderr
        assert j["faithfulness"]["checked"] is False
        assert "SNNC_PYTHON" in j["faithfulness"]["reason"]
        info = snnc("info", str(out))
        assert info.returncode == 0, info.stderr
        assert "not checked against a reference runtime" in info.stdout


def test_input_shape_comes_from_the_file(models, work):
    _, _, files = models["qcfs_vgg"]  # QCFS: no data needed; .pt2 and ONNX record the input shape
    for v in ("pt2", "onnx"):
        r = snnc("convert", str(files[v]), "-o", str(work / f"noshape_{v}.snn.h5"), "--json", "--quiet")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["input_shape"] == [1, 12, 12]


@pytest.mark.parametrize("variant", ["pt2", "onnx"])
def test_an_op_without_a_spiking_counterpart_is_refused_by_name(work, variant):
    path = work / f"sigmoid_{variant}{EXT[variant]}"
    export(randomised(Sigmoidal(), 3), variant, str(path), torch.randn(2, 1, 12, 12))
    out = work / f"sigmoid_{variant}.snn.h5"
    r = snnc("convert", str(path), "-o", str(out), "--input-shape", "1,12,12")
    assert r.returncode == 1
    msg = r.stderr.lower()
    assert "sigmoid" in msg and str(path).lower() in msg and ("onnx" in msg or "torch.export" in msg), r.stderr
    assert "retrain" in msg
    assert not out.exists()


def test_python_convert_exports_a_module_with_torch_export(models, work):
    snnc_py = pytest.importorskip("snnc")
    m, data, _ = models["resnetish"]
    net = snnc_py.convert(m, str(data), input_shape=(1, 12, 12))
    md = net.metadata
    assert md["source_format"] == "torch.export (.pt2)"
    assert md["faithfulness_reference"].startswith("torch ")
    assert md["faithfulness_argmax_agreement"] == "32/32"
