#!/usr/bin/env python3
"""An independent PyTorch implementation of snnc's SNN semantics: accuracy-per-T reference and
throughput peer for snnc's CPU engine (--device cpu, default) and CUDA engine (--device cuda).

Reads a `*.snn.h5` model (the format written by snnc, see snn/include/snn/model_file.hpp; needs h5py)
or a directory written by bench/export_npy (manifest.json + .npy files; numpy only), evaluates
the ANN view (each neuron layer = its source activation) and simulates the SNN view over T steps:

  per step t (0-based) and neuron:   LIF: v <- beta*v;   v <- v + (x[t] - b[t][c]);
                                     s = theta*[v >= theta];   v <- v - s (subtract) | v <- 0 where s>0 (zero)
  v starts at v_init*theta; b[t] = 0 for t >= T_b unless bias_constant (then row 0 at every step).
  Signed spikes (spikes = signed; subtract reset): theta' = theta*threshold_scale, n = net spike count
  (from 0), cap = max_spikes (none unless given): s = +theta' if v >= theta' and n < cap, -theta' if
  v < 0 and n > 0, else 0; n += s/theta'; v <- v - s. (Simulation only: the FTBC and naive paths here
  refuse signed models.)
  Spiking max pooling: a running sum of every input element; the output at step t is the increase of
  the window's largest running sum since step t-1 (0 before the first step), so the output's running
  sum equals the max of the inputs' running sums.
  Direct encoding (the preprocessed image at every step). Readout = last node; the prediction at t is
  the argmax of the readout summed over steps 0..t (ties: lowest class index).

The simulation is written the way one writes a fast SNN in PyTorch: layers that depend only on the
static input are computed once; every other stateless layer runs once on the [T_chunk*B, ...] tensor
(sample index t*B + b, as in snnc); only neuron layers and max pooling loop over t (in-place ops on a
preallocated output). `--self-test` checks this against a naive per-step, per-element implementation
on random small networks whose values are dyadic rationals (so float sums are exact in any order and
the two implementations must agree bit for bit), including FTBC (both variants).

FTBC (Wu et al., ECCV 2024) as in conversion/src/ftbc.cpp, variants "fixed" (--calibrate ftbc) and
"paper" (--calibrate ftbc-paper). Calibration images: by default the FIRST batches*batch_size images of
the calibration set; `--calib-shuffle-seed S` takes them from a numpy permutation instead, and
`--calib-snnc-seed S` reproduces snnc's own choice (std::shuffle with std::mt19937_64(S), libstdc++'s
algorithm re-implemented here) so that both calibrate on the same images.

On the GPU (--device cuda): the model and all images are moved to the GPU before timing, float32
throughout (TF32 off in cuDNN and cuBLAS unless --tf32), cuDNN with benchmark mode, torch.inference_mode,
one untimed warm-up pass over each batch shape, torch.cuda.synchronize() around every timed region.
Without a usable GPU, --device cuda prints one error line and exits 1. h5py is imported only where an
HDF5 file is read or written, so a python with torch and numpy alone runs export_npy directories with
IDX or npy:DIR data.

Output: one JSON object on stdout (see bench/README.md). Run with Debian's interpreter (torch 1.13):
  .venv/bin/python bench/torch_reference.py MODEL.snn.h5 --data fashion-mnist:test --T 32 --limit 1000
  python3 bench/torch_reference.py MODEL_NPY_DIR --data npy:DIR --T 32 --device cuda
  .venv/bin/python bench/torch_reference.py --self-test [--device cuda]
"""

import argparse
import gzip
import json
import math
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FORMAT = "snnc-network"
FORMAT_VERSION = 2  # written; version 1 (no ceil_mode / count_include_pad on pooling) is read too
READ_VERSIONS = (1, 2, 3)  # 3: signed spikes (written for models that have them, as snnc does)
KNOWN_TYPES = ("conv2d", "linear", "avgpool2d", "maxpool2d", "flatten", "add", "neuron")
NPY_FORMAT = "snnc-npy-export"  # directories written by bench/export_npy (numpy-only model exchange)
NPY_FORMAT_VERSION = 1


class ModelError(Exception):
    pass


def _h5py():
    """h5py, imported only where an HDF5 file is read or written (machines without h5py can still use
    npy exports, IDX files and `npy:DIR` datasets)."""
    try:
        import h5py
    except ImportError as e:
        raise ModelError(f"h5py is needed to read or write HDF5 files but cannot be imported ({e}); "
                         f"use an export_npy directory for the model and npy:DIR or IDX for the data")
    return h5py


# =====================================================================================================
# Model file
# =====================================================================================================

def _as_str(v):
    if isinstance(v, bytes):
        return v.decode("utf-8").rstrip("\0")
    if isinstance(v, np.ndarray) and v.shape == ():
        return _as_str(v[()])
    if isinstance(v, np.bytes_):
        return bytes(v).decode("utf-8").rstrip("\0")
    return str(v).rstrip("\0")


def _as_float(v):
    return float(np.asarray(v).reshape(-1)[0])


class Node:
    """One layer of the network graph, as stored in /layers/NNNN."""

    def __init__(self, index, type_, name, inputs, num=None, strs=None, tensors=None):
        self.index = index
        self.type = type_
        self.name = name
        self.inputs = list(inputs)
        self.num = dict(num or {})
        self.str = dict(strs or {})
        self.tensors = dict(tensors or {})  # name -> float32 torch tensor
        self.shape = None  # output shape per sample (list), filled by Model.infer_shapes

    def n(self, key, default=None):
        if key in self.num:
            return self.num[key]
        if default is None:
            raise ModelError(f"layer '{self.name}' ({self.type}): missing attribute n:{key}")
        return default

    def s(self, key):
        if key not in self.str:
            raise ModelError(f"layer '{self.name}' ({self.type}): missing attribute s:{key}")
        return self.str[key]


class Model:
    def __init__(self, input_shape, nodes, mean=None, std=None, metadata=None):
        self.input_shape = [int(d) for d in input_shape]
        self.nodes = nodes
        self.mean = None if mean is None else [float(m) for m in mean]
        self.std = None if std is None else [float(s) for s in std]
        self.metadata = dict(metadata or {})
        self.infer_shapes()

    # ------------------------------------------------------------------ shapes and checks
    def infer_shapes(self):
        if len(self.input_shape) < 1:
            raise ModelError("input_shape is empty")
        if not self.nodes:
            raise ModelError("the network has no layers")
        if (self.mean is None) != (self.std is None):
            raise ModelError("preprocessing needs both mean and std")
        if self.mean is not None and (len(self.mean) != len(self.std) or len(self.mean) != self.input_shape[0]):
            raise ModelError(f"preprocessing: {len(self.mean)} mean / {len(self.std)} std values for "
                             f"{self.input_shape[0]} input channels")
        for i, nd in enumerate(self.nodes):
            if nd.type not in KNOWN_TYPES:
                raise ModelError(f"layer #{i} '{nd.name}': unknown type '{nd.type}'")
            arity = 2 if nd.type == "add" else 1
            if len(nd.inputs) != arity:
                raise ModelError(f"layer '{nd.name}' ({nd.type}) takes {arity} inputs, has {len(nd.inputs)}")
            for j in nd.inputs:
                if j != -1 and not (0 <= j < i):
                    raise ModelError(f"layer '{nd.name}': input {j} is not an earlier node")
            ins = [self.input_shape if j == -1 else self.nodes[j].shape for j in nd.inputs]
            nd.shape = self._shape(nd, ins)
        out = self.nodes[-1]
        if out.type in ("neuron", "maxpool2d"):
            raise ModelError(f"the last layer '{out.name}' ({out.type}) must be a non-spiking readout")
        if len(out.shape) != 1:
            raise ModelError(f"the readout '{out.name}' must give a vector of class scores, got {out.shape}")

    @staticmethod
    def _shape(nd, ins):
        x = ins[0]
        t = nd.type
        if t == "conv2d":
            w = nd.tensors.get("weight")
            if w is None or w.dim() != 4:
                raise ModelError(f"layer '{nd.name}': conv2d needs a 4-d weight")
            g = int(nd.n("groups", 1))
            if len(x) != 3 or x[0] != w.shape[1] * g:
                raise ModelError(f"layer '{nd.name}': input {x} does not fit weight {list(w.shape)} groups {g}")
            kh, kw = w.shape[2], w.shape[3]
            sh, sw = int(nd.n("stride_h")), int(nd.n("stride_w"))
            ph, pw = int(nd.n("pad_h")), int(nd.n("pad_w"))
            b = nd.tensors.get("bias")
            if b is not None and b.numel() != w.shape[0]:
                raise ModelError(f"layer '{nd.name}': bias has {b.numel()} values for {w.shape[0]} outputs")
            return [w.shape[0], (x[1] + 2 * ph - kh) // sh + 1, (x[2] + 2 * pw - kw) // sw + 1]
        if t == "linear":
            w = nd.tensors.get("weight")
            if w is None or w.dim() != 2 or len(x) != 1 or x[0] != w.shape[1]:
                raise ModelError(f"layer '{nd.name}': input {x} does not fit linear weight "
                                 f"{None if w is None else list(w.shape)}")
            return [w.shape[0]]
        if t in ("avgpool2d", "maxpool2d"):
            kh, kw = int(nd.n("kernel_h")), int(nd.n("kernel_w"))
            sh, sw = int(nd.n("stride_h")), int(nd.n("stride_w"))
            ph, pw = int(nd.n("pad_h")), int(nd.n("pad_w"))
            if len(x) != 3:
                raise ModelError(f"layer '{nd.name}': pooling expects [C, H, W], got {x}")
            ceil = bool(nd.n("ceil_mode", 0.0))

            def pooled(n, k, s, p):  # PyTorch's pooling_output_shape
                out = (n + 2 * p - k + (s - 1 if ceil else 0)) // s + 1
                return out - 1 if ceil and (out - 1) * s >= n + p else out
            return [x[0], pooled(x[1], kh, sh, ph), pooled(x[2], kw, sw, pw)]
        if t == "flatten":
            return [int(np.prod(x))]
        if t == "add":
            if ins[0] != ins[1]:
                raise ModelError(f"layer '{nd.name}': input shapes differ: {ins[0]} and {ins[1]}")
            return list(x)
        if t == "neuron":
            c = int(nd.n("channels"))
            if x[0] != c:
                raise ModelError(f"layer '{nd.name}': input {x} has {x[0]} channels, layer has {c}")
            th = nd.tensors.get("threshold")
            if th is None or th.numel() not in (1, c) or not bool((th > 0).all()):
                raise ModelError(f"layer '{nd.name}': threshold must be 1 or {c} positive values")
            b = nd.tensors.get("bias")
            if b is not None and (b.dim() != 2 or b.shape[1] != c):
                raise ModelError(f"layer '{nd.name}': temporal bias must be [T, {c}], got {list(b.shape)}")
            for key in ("model", "reset", "activation"):
                nd.s(key)
            if nd.s("activation") == "qcfs" and int(nd.n("levels")) <= 0:
                raise ModelError(f"layer '{nd.name}': QCFS needs levels > 0")
            return list(x)
        raise ModelError(f"unknown layer type {t}")

    def neuron_nodes(self):
        return [nd for nd in self.nodes if nd.type == "neuron"]

    @property
    def device(self):
        """Where the model's tensors live (all on one device; cpu for a model without tensors)."""
        for nd in self.nodes:
            for t in nd.tensors.values():
                return t.device
        return torch.device("cpu")

    def to(self, device):
        """Moves every tensor to `device` (in place); returns self."""
        for nd in self.nodes:
            nd.tensors = {k: v.to(device) for k, v in nd.tensors.items()}
        return self

    def clear_biases(self):
        for nd in self.neuron_nodes():
            nd.tensors.pop("bias", None)
            nd.num["bias_constant"] = 0.0


def load_model(path):
    """A model from a .snn.h5 file (needs h5py) or from a directory written by bench/export_npy (numpy only)."""
    if not os.path.exists(path):
        raise ModelError(f"model file not found: {path}")
    if os.path.isdir(path):
        return load_model_npy(path)
    h5py = _h5py()
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ModelError(f"{path}: not an HDF5 file ({e})")
    with f:
        if "format" not in f.attrs or _as_str(f.attrs["format"]) != FORMAT:
            raise ModelError(f"{path}: not an snnc network file (missing format = \"{FORMAT}\")")
        version = int(_as_float(f.attrs["format_version"]))
        if version not in READ_VERSIONS:
            raise ModelError(f"{path}: model format version {version} not supported (reads {READ_VERSIONS})")
        input_shape = [int(v) for v in np.asarray(f.attrs["input_shape"]).reshape(-1)]
        count = int(_as_float(f.attrs["layer_count"]))
        mean = std = None
        if "preprocessing" in f:
            mean = np.asarray(f["preprocessing/mean"], dtype=np.float32).reshape(-1).tolist()
            std = np.asarray(f["preprocessing/std"], dtype=np.float32).reshape(-1).tolist()
        metadata = {}
        if "metadata" in f:
            metadata = {k: _as_str(v) for k, v in f["metadata"].attrs.items()}
        layers = f["layers"]
        if len(layers) != count:
            raise ModelError(f"{path}: file says {count} layers but holds {len(layers)}")
        nodes = []
        for i in range(count):
            g = layers[f"{i:04d}"]
            num, strs, tensors = {}, {}, {}
            for k, v in g.attrs.items():
                if k.startswith("n:"):
                    num[k[2:]] = _as_float(v)
                elif k.startswith("s:"):
                    strs[k[2:]] = _as_str(v)
            for k in g.keys():
                tensors[k] = torch.from_numpy(np.asarray(g[k], dtype=np.float32).copy())
            inputs = [int(v) for v in np.asarray(g.attrs["inputs"]).reshape(-1)] if g.attrs["inputs"].shape != () \
                else [int(g.attrs["inputs"])]
            nodes.append(Node(i, _as_str(g.attrs["type"]), _as_str(g.attrs["name"]), inputs, num, strs, tensors))
    return Model(input_shape, nodes, mean, std, metadata)


def _json_number(v, where):
    # export_npy writes non-finite numbers as the strings "nan", "inf", "-inf" (JSON has none)
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ModelError(f"{where}: not a number: {v!r}")
    try:
        return float(v)
    except ValueError:
        raise ModelError(f"{where}: not a number: {v!r}")


def load_npy_file(path, what):
    """np.load without pickles, with errors that name the file."""
    if not os.path.isfile(path):
        raise ModelError(f"{what}: file not found: {path}")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise ModelError(f"{path}: not a readable .npy file ({e})")


def load_model_npy(directory):
    """Reads a model exported by bench/export_npy: DIR/manifest.json plus one .npy file per tensor. Gives
    the same Model as load_model() on the .snn.h5 file it was exported from (float32 tensors bit for bit,
    numbers as float64, strings)."""
    mpath = os.path.join(directory, "manifest.json")
    if not os.path.isfile(mpath):
        raise ModelError(f"{directory}: no manifest.json (not a directory written by export_npy)")
    try:
        with open(mpath) as f:
            m = json.load(f)
    except (ValueError, OSError) as e:
        raise ModelError(f"{mpath}: cannot read ({e})")
    if not isinstance(m, dict) or m.get("format") != NPY_FORMAT:
        raise ModelError(f"{mpath}: not an snnc npy export (missing format = \"{NPY_FORMAT}\")")
    if m.get("format_version") != NPY_FORMAT_VERSION:
        raise ModelError(f"{mpath}: export format version {m.get('format_version')} not supported "
                         f"(reads {NPY_FORMAT_VERSION})")
    if int(m.get("model_format_version", FORMAT_VERSION)) not in READ_VERSIONS:
        raise ModelError(f"{mpath}: model format version {m.get('model_format_version')} not supported "
                         f"(reads {READ_VERSIONS})")
    try:
        input_shape = [int(v) for v in m["input_shape"]]
        mean = std = None
        if m.get("preprocessing"):
            mean = np.asarray(m["preprocessing"]["mean"], dtype=np.float32).reshape(-1).tolist()
            std = np.asarray(m["preprocessing"]["std"], dtype=np.float32).reshape(-1).tolist()
        metadata = {str(k): str(v) for k, v in (m.get("metadata") or {}).items()}
        nodes = []
        for i, nd in enumerate(m["nodes"]):
            where = f"{mpath}, layer #{i}"
            if int(nd.get("index", i)) != i:
                raise ModelError(f"{where}: index {nd.get('index')} out of order")
            num = {str(k): _json_number(v, f"{where} number '{k}'") for k, v in nd.get("numbers", {}).items()}
            strs = {str(k): str(v) for k, v in nd.get("strings", {}).items()}
            tensors = {}
            for k, t in nd.get("tensors", {}).items():
                fname = t["file"]
                if os.path.basename(fname) != fname or fname in ("", ".", ".."):
                    raise ModelError(f"{where}: tensor '{k}': file name {fname!r} must be a plain name in the directory")
                arr = load_npy_file(os.path.join(directory, fname), f"{where} tensor '{k}'")
                if list(arr.shape) != [int(d) for d in t["shape"]]:
                    raise ModelError(f"{where}: tensor '{k}' in {fname} has shape {list(arr.shape)}, "
                                     f"manifest says {t['shape']}")
                if arr.dtype != np.float32:
                    raise ModelError(f"{where}: tensor '{k}' in {fname} is {arr.dtype}, expected float32")
                tensors[str(k)] = torch.from_numpy(np.array(arr, dtype=np.float32, copy=True))
            nodes.append(Node(i, str(nd["type"]), str(nd["name"]), [int(v) for v in nd["inputs"]], num, strs, tensors))
    except (KeyError, TypeError, AttributeError) as e:
        raise ModelError(f"{mpath}: malformed manifest ({type(e).__name__}: {e})")
    return Model(input_shape, nodes, mean, std, metadata)


def save_npy(path, array):
    """A .npy file exactly as bench/export_npy writes it (format 1.0, little-endian, C order)."""
    a = np.ascontiguousarray(array)
    a = a.astype(a.dtype.newbyteorder("<"), copy=False)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, a, version=(1, 0), allow_pickle=False)


def save_model_npy(model, directory):
    """Writes the layout of bench/export_npy (manifest.json + one float32 .npy per tensor). The C++ tool is
    the producer used in practice; this writer exists for the self-test and for Python-made models."""
    os.makedirs(directory)
    nodes = []
    for i, nd in enumerate(model.nodes):
        tensors = {}
        for k, t in nd.tensors.items():
            fname = f"{i:04d}_{k}.npy"
            arr = t.detach().cpu().numpy().astype(np.float32)
            save_npy(os.path.join(directory, fname), arr)
            tensors[k] = {"shape": list(arr.shape), "dtype": "<f4", "file": fname}
        nodes.append({"index": i, "type": nd.type, "name": nd.name, "inputs": list(nd.inputs),
                      "numbers": {k: (v if math.isfinite(v) else str(v)) for k, v in nd.num.items()},
                      "strings": dict(nd.str), "tensors": tensors})
    manifest = {"format": NPY_FORMAT, "format_version": NPY_FORMAT_VERSION, "source": "torch_reference",
                "model_format_version": FORMAT_VERSION, "input_shape": list(model.input_shape),
                "preprocessing": None if model.mean is None else {"mean": model.mean, "std": model.std},
                "metadata": dict(model.metadata), "nodes": nodes}
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def save_model(model, path):
    """Writes a model in the snnc-network format (fixed-length strings, float32 tensors, as snnc does)."""
    h5py = _h5py()

    def sattr(obj, key, value):
        obj.attrs.create(key, np.bytes_(value if value else "\0"))

    with h5py.File(path, "w") as f:
        sattr(f, "format", FORMAT)
        signed = any(nd.str.get("spikes", "binary") == "signed" for nd in model.nodes if nd.type == "neuron")
        f.attrs.create("format_version", np.int64(3 if signed else FORMAT_VERSION))
        sattr(f, "snnc_version", "torch_reference")
        f.attrs.create("input_shape", np.asarray(model.input_shape, dtype=np.int64))
        f.attrs.create("layer_count", np.int64(len(model.nodes)))
        meta = f.create_group("metadata")
        for k, v in model.metadata.items():
            sattr(meta, k, v)
        if model.mean is not None:
            pre = f.create_group("preprocessing")
            pre.create_dataset("mean", data=np.asarray(model.mean, dtype=np.float32))
            pre.create_dataset("std", data=np.asarray(model.std, dtype=np.float32))
        layers = f.create_group("layers")
        for i, nd in enumerate(model.nodes):
            if nd.type == "conv2d":  # snnc's reader also wants these (redundant with the weight's shape)
                w = nd.tensors["weight"]
                for k, v in (("in_channels", w.shape[1] * int(nd.n("groups", 1))), ("out_channels", w.shape[0]),
                             ("kernel_h", w.shape[2]), ("kernel_w", w.shape[3])):
                    nd.num.setdefault(k, float(v))
            g = layers.create_group(f"{i:04d}")
            sattr(g, "type", nd.type)
            sattr(g, "name", nd.name)
            g.attrs.create("inputs", np.asarray(nd.inputs, dtype=np.int64))
            for k, v in nd.num.items():
                g.attrs.create("n:" + k, np.float64(v))
            for k, v in nd.str.items():
                sattr(g, "s:" + k, v)
            for k, t in nd.tensors.items():
                g.create_dataset(k, data=t.detach().cpu().numpy().astype(np.float32))


# =====================================================================================================
# Datasets
# =====================================================================================================

def _read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    off = 4 + 4 * ndim
    return np.frombuffer(data, dtype=np.uint8, offset=off, count=int(np.prod(dims))).reshape(dims)


def _unit_floats(u8):
    # snnc: float(byte) / 255.0f in float32, as PyTorch's `x / 255` in training.
    return u8.astype(np.float32) / np.float32(255.0)


def load_dataset(spec, limit=0):
    """fashion-mnist:train|test, an IDX images file (labels beside it), an HDF5 file with
    `images` (N x C x H x W or N x H x W, uint8 or float) and `labels`, or npy:DIR with DIR/images.npy
    and DIR/labels.npy (as written by bench/export_npy --data; same layouts and types as HDF5). Returns
    (images float32 [N, C, H, W] in [0, 1] for uint8 sources, labels int64 [N]), on the CPU."""
    if spec.startswith("npy:"):
        d = spec[4:]
        if not os.path.isdir(d):
            raise ValueError(f"dataset '{spec}': {d} is not a directory")
        try:
            xs = load_npy_file(os.path.join(d, "images.npy"), f"dataset '{spec}'")
            ys = load_npy_file(os.path.join(d, "labels.npy"), f"dataset '{spec}'")
        except ModelError as e:
            raise ValueError(str(e))
        if xs.ndim not in (3, 4) or ys.ndim != 1 or xs.shape[0] != ys.shape[0]:
            raise ValueError(f"dataset '{spec}': images {list(xs.shape)} and labels {list(ys.shape)} do not fit "
                             f"(expected N x C x H x W or N x H x W, and N)")
        if not (xs.dtype == np.uint8 or xs.dtype.kind == "f") or ys.dtype.kind not in "iu":
            raise ValueError(f"dataset '{spec}': images must be uint8 or float, labels integers "
                             f"(got {xs.dtype}, {ys.dtype})")
        keep = min(limit, xs.shape[0]) if limit > 0 else xs.shape[0]
        x = np.asarray(xs[:keep])
        y = np.asarray(ys[:keep]).astype(np.int64)
        if x.ndim == 3:
            x = x[:, None]
        x = _unit_floats(x) if x.dtype == np.uint8 else x.astype(np.float32)
        return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(np.ascontiguousarray(y))
    if spec.startswith("fashion-mnist:"):
        split = spec.split(":", 1)[1]
        if split not in ("train", "test"):
            raise ValueError(f"unknown Fashion-MNIST split '{split}'")
        stem = "train" if split == "train" else "t10k"
        img = os.path.join(FASHION_MNIST_DIR, f"{stem}-images-idx3-ubyte.gz")
        lab = os.path.join(FASHION_MNIST_DIR, f"{stem}-labels-idx1-ubyte.gz")
    elif "idx3-ubyte" in os.path.basename(spec):
        img = spec
        lab = spec.replace("images-idx3", "labels-idx1")
    elif spec.endswith(".h5") or spec.endswith(".hdf5"):
        h5py = _h5py()
        with h5py.File(spec, "r") as f:
            n = f["images"].shape[0]
            keep = min(limit, n) if limit > 0 else n
            x = np.asarray(f["images"][:keep])
            y = np.asarray(f["labels"][:keep]).reshape(-1).astype(np.int64)
        if x.ndim == 3:
            x = x[:, None]
        x = _unit_floats(x) if x.dtype == np.uint8 else x.astype(np.float32)
        return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)
    else:
        raise ValueError(f"cannot tell the format of dataset '{spec}'")
    x = _read_idx(img)
    y = _read_idx(lab).astype(np.int64)
    keep = min(limit, len(x)) if limit > 0 else len(x)
    x = _unit_floats(x[:keep])[:, None]
    return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y[:keep].copy())


# =====================================================================================================
# snnc's choice of calibration images: std::shuffle(iota(N), std::mt19937_64(seed)), libstdc++ (GCC 12)
# =====================================================================================================

class MT19937_64:
    def __init__(self, seed):
        self.mt = [0] * 312
        self.mt[0] = seed & 0xFFFFFFFFFFFFFFFF
        for i in range(1, 312):
            prev = self.mt[i - 1]
            self.mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & 0xFFFFFFFFFFFFFFFF
        self.idx = 312

    def _twist(self):
        mt = self.mt
        upper, lower = 0xFFFFFFFF80000000, 0x7FFFFFFF
        for i in range(312):
            y = (mt[i] & upper) | (mt[(i + 1) % 312] & lower)
            v = mt[(i + 156) % 312] ^ (y >> 1)
            if y & 1:
                v ^= 0xB5026F5AA96619E9
            mt[i] = v
        self.idx = 0

    def __call__(self):
        if self.idx >= 312:
            self._twist()
        y = self.mt[self.idx]
        self.idx += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & 0xFFFFFFFFFFFFFFFF


def _uniform_u64(g, lo, hi):
    # libstdc++ uniform_int_distribution<unsigned long>{lo, hi} with a 64-bit engine: Lemire's method.
    rng = (hi - lo + 1) & 0xFFFFFFFFFFFFFFFF
    prod = g() * rng
    low = prod & 0xFFFFFFFFFFFFFFFF
    if low < rng:
        threshold = ((1 << 64) - rng) % rng
        while low < threshold:
            prod = g() * rng
            low = prod & 0xFFFFFFFFFFFFFFFF
    return lo + (prod >> 64)


def snnc_shuffle(n, seed):
    """The permutation snnc's calibration_batches() makes (conversion/src/calibration.cpp)."""
    idx = list(range(n))
    if n == 0:
        return idx
    g = MT19937_64(seed)
    urngrange = (1 << 64) - 1
    if urngrange // n >= n:  # libstdc++: two swap positions per engine call
        i = 1
        if n % 2 == 0:
            j = _uniform_u64(g, 0, 1)
            idx[i], idx[j] = idx[j], idx[i]
            i += 1
        while i != n:
            r = i + 1  # swap_range = i - first + 1
            x = _uniform_u64(g, 0, r * (r + 1) - 1)
            p1, p2 = x // (r + 1), x % (r + 1)
            idx[i], idx[p1] = idx[p1], idx[i]
            i += 1
            idx[i], idx[p2] = idx[p2], idx[i]
            i += 1
        return idx
    for i in range(1, n):
        j = _uniform_u64(g, 0, i)
        idx[i], idx[j] = idx[j], idx[i]
    return idx


# =====================================================================================================
# The engine (fast: time-batched)
# =====================================================================================================

class Neuron:
    """Per-layer constants of a neuron node in the form the tensor code needs."""

    def __init__(self, nd):
        self.nd = nd
        self.C = int(nd.n("channels"))
        self.rank = len(nd.shape)  # per-sample rank, channel first
        self.bshape = [self.C] + [1] * (self.rank - 1)
        th = nd.tensors["threshold"].reshape(-1).float()
        self.device = th.device
        self.theta_vec = th if th.numel() == self.C else th.expand(self.C).clone()
        # θ broadcast over one sample [C, ...]; a 0-d tensor when scalar (float32 either way).
        self.theta = th.reshape(()) if th.numel() == 1 else th.reshape(self.bshape)
        self.model = nd.s("model")
        self.reset = nd.s("reset")
        self.act = nd.s("activation")
        if self.model not in ("if", "lif") or self.reset not in ("subtract", "zero") or \
                self.act not in ("relu", "clip", "qcfs"):
            raise ModelError(f"layer '{nd.name}': unknown model/reset/activation "
                             f"{self.model}/{self.reset}/{self.act}")
        self.signed = nd.str.get("spikes", "binary") == "signed"
        if nd.str.get("spikes", "binary") not in ("binary", "signed"):
            raise ModelError(f"layer '{nd.name}': unknown spikes '{nd.str.get('spikes')}'")
        scale = np.float32(nd.n("threshold_scale", 1.0))
        # The SNN threshold and spike: theta*scale in float32, as snnc's NeuronLayer::spike_threshold.
        self.spike_theta = self.theta * torch.tensor(scale, dtype=torch.float32, device=self.device)
        self.spike_theta_vec = self.theta_vec * torch.tensor(scale, dtype=torch.float32, device=self.device)
        self.cap = float(nd.num.get("max_spikes", float("inf")))
        self.lif = self.model == "lif"
        self.beta = torch.tensor(float(np.float32(nd.n("beta", 1.0))), dtype=torch.float32, device=self.device)
        self.v_init = float(np.float32(nd.n("v_init", 0.5)))
        self.levels = int(nd.num.get("levels", 0.0))
        self.inner = int(np.prod(nd.shape)) // self.C

    # ----- bias b[t][c]
    @property
    def bias(self):
        return self.nd.tensors.get("bias")

    @property
    def bias_constant(self):
        return self.nd.num.get("bias_constant", 0.0) != 0.0

    def bias_rows(self, t0, steps):
        """[steps, C] float32 for steps t0..t0+steps-1, or None when the layer has no bias."""
        b = self.bias
        if b is None:
            return None
        if self.bias_constant:
            return b[0:1].expand(steps, self.C)
        out = torch.zeros(steps, self.C, dtype=torch.float32, device=b.device)
        lo, hi = t0, min(t0 + steps, b.shape[0])
        if hi > lo:
            out[: hi - lo] = b[lo:hi]
        return out

    # ----- ANN view
    def activate(self, x):
        if self.act == "relu":
            return torch.relu(x)
        th = self.theta
        if self.act == "clip":
            return torch.minimum(torch.relu(x), th)
        y = torch.clamp(x / th, 0.0, 1.0)
        L = float(self.levels)
        return torch.floor(y * L + 0.5) / L * th

    def count_spikes(self, out, steps, B):
        """Spikes per step in a chunk output [steps*B, C, ...] whose values are 0 or θ_c > 0: float32 sums
        over each (image, channel) plane divided by θ_c and rounded (exact: a plane holds far fewer than
        2^20 neurons), then summed in float64. One fast pass instead of a slow `!= 0` + integer sum."""
        if self.signed:
            out = out.abs()  # -theta' counts as a spike too
        per_plane = out.view(steps, B, self.C, -1).sum(3).double()
        return torch.round(per_plane / self.spike_theta_vec.double()).sum(dim=(1, 2))

    def init_membrane(self, B):
        """The membrane v (v_init*theta'), or for signed neurons (v, net spike counts)."""
        v = torch.empty([B] + list(self.nd.shape), dtype=torch.float32, device=self.device)
        v.copy_((self.spike_theta_vec * torch.tensor(self.v_init, dtype=torch.float32, device=self.device))
                .reshape(self.bshape).expand(v.shape))
        return (v, torch.zeros_like(v)) if self.signed else v

    def require_binary(self, what):
        if self.signed:
            raise ModelError(f"layer '{self.nd.name}': signed spikes are simulated here, but {what} is not "
                             f"implemented for them")


def _signed_step(neu, v, n, xt, s_out):
    """One timestep of signed neurons in place (v, net counts n, spikes s_out: -theta' | 0 | theta')."""
    if neu.lif:
        v.mul_(neu.beta)
    v.add_(xt)
    pos = (v >= neu.spike_theta) & (n < neu.cap)
    neg = (v < 0) & (n > 0)
    sign = pos.float() - neg.float()
    n.add_(sign)
    torch.mul(sign, neu.spike_theta, out=s_out)
    v.sub_(s_out)


def _step(neu, v, xt, s_out, mask):
    """One timestep in place: v (membrane) updated, s_out (float32) gets the spikes 0 | θ. xt already has
    the bias removed (x - b, computed before the add, as snnc does). mask: a bool buffer like v."""
    if neu.lif:
        v.mul_(neu.beta)
    v.add_(xt)
    if neu.reset == "subtract":
        torch.ge(v, neu.theta, out=s_out)  # 1.0 | 0.0 written straight into float32: no bool pass
        s_out.mul_(neu.theta)              # exactly θ | 0
        v.sub_(s_out)
    else:
        torch.ge(v, neu.theta, out=mask)
        torch.mul(mask, neu.theta, out=s_out)
        v.masked_fill_(mask, 0.0)


class Engine:
    """Runs a Model on the device its tensors are on (Model.to(device) first); images passed to
    forward_ann/simulate must be on that device too, and results come back there."""

    def __init__(self, model):
        self.model = model
        self.device = model.device
        self.neurons = {nd.index: Neuron(nd) for nd in model.neuron_nodes()}
        nodes = model.nodes
        # static: stateless and fed only by static nodes (the direct-encoded input is static).
        self.static = []
        for nd in nodes:
            stateful = nd.type in ("neuron", "maxpool2d")
            self.static.append(not stateful and all(j == -1 or self.static[j] for j in nd.inputs))
        self.last_use = [-1] * len(nodes)
        for nd in nodes:
            for j in nd.inputs:
                if j >= 0:
                    self.last_use[j] = nd.index
        if model.mean is not None:
            cs = [len(model.mean)] + [1] * (len(model.input_shape) - 1)
            self.pre_mean = torch.tensor(model.mean, dtype=torch.float32, device=self.device).reshape(cs)
            self.pre_std = torch.tensor(model.std, dtype=torch.float32, device=self.device).reshape(cs)
        else:
            self.pre_mean = None
        self.dynamic_floats_per_step = sum(int(np.prod(nd.shape)) for nd in nodes if not self.static[nd.index])

    def preprocess(self, images):
        if list(images.shape[1:]) != self.model.input_shape:
            raise ModelError(f"input images {list(images.shape)} do not fit the network input "
                             f"{self.model.input_shape}")
        if self.pre_mean is None:
            return images
        return (images - self.pre_mean) / self.pre_std

    # ------------------------------------------------------------------ stateless layers
    @staticmethod
    def stateless(nd, ins):
        t = nd.type
        x = ins[0]
        if t == "conv2d":
            return F.conv2d(x, nd.tensors["weight"], nd.tensors.get("bias"),
                            (int(nd.n("stride_h")), int(nd.n("stride_w"))),
                            (int(nd.n("pad_h")), int(nd.n("pad_w"))), 1, int(nd.n("groups", 1)))
        if t == "linear":
            return F.linear(x, nd.tensors["weight"], nd.tensors.get("bias"))
        if t == "avgpool2d":
            return F.avg_pool2d(x, (int(nd.n("kernel_h")), int(nd.n("kernel_w"))),
                                (int(nd.n("stride_h")), int(nd.n("stride_w"))),
                                (int(nd.n("pad_h")), int(nd.n("pad_w"))), ceil_mode=bool(nd.n("ceil_mode", 0.0)),
                                count_include_pad=bool(nd.n("count_include_pad", 1.0)))
        if t == "maxpool2d":  # ANN view only
            return F.max_pool2d(x, (int(nd.n("kernel_h")), int(nd.n("kernel_w"))),
                                (int(nd.n("stride_h")), int(nd.n("stride_w"))),
                                (int(nd.n("pad_h")), int(nd.n("pad_w"))), ceil_mode=bool(nd.n("ceil_mode", 0.0)))
        if t == "flatten":
            return x.reshape(x.shape[0], -1)
        if t == "add":
            return ins[0] + ins[1]
        raise ModelError(f"stateless(): unexpected {t}")

    # ------------------------------------------------------------------ ANN view
    def forward_ann(self, images, keep=False):
        x = self.preprocess(images)
        outs = [None] * len(self.model.nodes)
        for nd in self.model.nodes:
            ins = [x if j == -1 else outs[j] for j in nd.inputs]
            if nd.type == "neuron":
                outs[nd.index] = self.neurons[nd.index].activate(ins[0])
            else:
                outs[nd.index] = self.stateless(nd, ins)
            if not keep:
                for j in nd.inputs:
                    if j >= 0 and self.last_use[j] == nd.index:
                        outs[j] = None
        return (outs[-1], outs) if keep else outs[-1]

    # ------------------------------------------------------------------ SNN view
    def chunk_steps_for(self, T, B, max_chunk_steps=0, memory_budget=1 << 30):
        per_step = max(1, self.dynamic_floats_per_step * B * 4)
        c = max_chunk_steps if max_chunk_steps > 0 else memory_budget // per_step
        return max(1, min(c, T))

    def simulate(self, images, T, max_chunk_steps=0, memory_budget=1 << 30, hook=None, count_spikes=True,
                 record=None):
        """Returns predictions [T, B] (int64) and spikes [num neuron layers, T] (float64 counts).
        record (a dict, for tests): receives every dynamic node's output as a list of [steps*B, ...] chunks."""
        nodes = self.model.nodes
        B = images.shape[0]
        x_static = self.preprocess(images)
        chunk = self.chunk_steps_for(T, B, max_chunk_steps, memory_budget)
        neuron_ids = [nd.index for nd in self.model.neuron_nodes()]
        slot = {n: k for k, n in enumerate(neuron_ids)}
        dev = self.device
        spikes = torch.zeros(len(neuron_ids), T, dtype=torch.float64, device=dev)
        preds = torch.empty(T, B, dtype=torch.int64, device=dev)
        state = {}
        for nd in nodes:
            if nd.type == "neuron":
                state[nd.index] = self.neurons[nd.index].init_membrane(B)
            elif nd.type == "maxpool2d":
                ins_shape = self.model.input_shape if nd.inputs[0] == -1 else nodes[nd.inputs[0]].shape
                out_shape = list(nodes[nd.index].shape)
                # [running sums of the inputs, largest running sum per window after the previous step]
                state[nd.index] = (torch.zeros([B] + list(ins_shape), dtype=torch.float32, device=dev),
                                   torch.zeros([B] + out_shape, dtype=torch.float32, device=dev))
        static_out = [None] * len(nodes)
        K = nodes[-1].shape[0]
        acc = torch.zeros(B, K, dtype=torch.float32, device=dev)

        for t0 in range(0, T, chunk):
            steps = min(chunk, T - t0)
            outs = [None] * len(nodes)
            for nd in nodes:
                i = nd.index
                if self.static[i]:
                    if t0 == 0:
                        ins = [x_static if j == -1 else static_out[j] for j in nd.inputs]
                        static_out[i] = self.stateless(nd, ins)
                    continue
                # (tensor, is_static) per input
                ins = [(x_static, True) if j == -1 else
                       ((static_out[j], True) if self.static[j] else (outs[j], False)) for j in nd.inputs]
                if nd.type == "neuron":
                    if hook is not None:
                        hook.before_neuron_layer(self, i, ins[0][0], ins[0][1], t0, steps, B)
                    out = self.neuron_chunk(self.neurons[i], ins[0][0], ins[0][1], state[i], t0, steps, B)
                    if count_spikes:
                        spikes[slot[i], t0:t0 + steps] += self.neurons[i].count_spikes(out, steps, B)
                elif nd.type == "maxpool2d":
                    out = self.maxpool_chunk(nd, ins[0][0], ins[0][1], state[i], steps, B)
                else:
                    xs = []
                    for tns, st in ins:
                        if st:  # a static input of a dynamic node: the same tensor at every step
                            tns = tns.unsqueeze(0).expand((steps,) + tuple(tns.shape)) \
                                .reshape((steps * B,) + tuple(tns.shape[1:]))
                        xs.append(tns)
                    out = self.stateless(nd, xs)
                outs[i] = out
                if record is not None:
                    record.setdefault(i, []).append(out.clone())
                for j in nd.inputs:
                    if j >= 0 and self.last_use[j] == i and not self.static[j]:
                        outs[j] = None
            # anytime readout: running float32 sum over steps, argmax after each step
            if self.static[len(nodes) - 1]:
                y = static_out[-1]
                for t in range(steps):
                    acc.add_(y)
                    preds[t0 + t] = acc.argmax(1)
            else:
                y = outs[-1].view(steps, B, K)
                for t in range(steps):
                    acc.add_(y[t])
                    preds[t0 + t] = acc.argmax(1)
        return preds, spikes

    @staticmethod
    def neuron_chunk(neu, x, x_is_static, v, t0, steps, B):
        """Runs the recurrence over the chunk; x is [steps*B, C, ...] or (static) [B, C, ...]."""
        counts = None
        if neu.signed:
            v, counts = v
        sample = list(v.shape[1:])
        out = torch.empty([steps, B] + sample, dtype=torch.float32, device=v.device)
        mask = torch.empty([B] + sample, dtype=torch.bool, device=v.device)
        rows = neu.bias_rows(t0, steps)

        def step(xt, s_out):
            if counts is None:
                _step(neu, v, xt, s_out, mask)
            else:
                _signed_step(neu, v, counts, xt, s_out)
        if x_is_static:
            for t in range(steps):
                xt = x if rows is None else x - rows[t].reshape(neu.bshape)
                step(xt, out[t])
        else:
            xv = x.view([steps, B] + sample)
            if rows is not None:
                xv = xv - rows.reshape([steps, 1] + neu.bshape)
            for t in range(steps):
                step(xv[t], out[t])
        return out.view([steps * B] + sample)

    @staticmethod
    def maxpool_chunk(nd, x, x_is_static, st, steps, B):
        acc, prev = st
        C, H, W = acc.shape[1:]
        kh, kw = int(nd.n("kernel_h")), int(nd.n("kernel_w"))
        sh, sw = int(nd.n("stride_h")), int(nd.n("stride_w"))
        ph, pw = int(nd.n("pad_h")), int(nd.n("pad_w"))
        if x_is_static:
            x = x.unsqueeze(0).expand(steps, B, C, H, W)
        else:
            x = x.view(steps, B, C, H, W)
        # running sums after each step, accumulated in float32 step by step (as snnc does)
        sums = torch.empty(steps, B, C, H, W, dtype=torch.float32, device=acc.device)
        running = acc
        for t in range(steps):
            torch.add(running, x[t], out=sums[t])
            running = sums[t]
        acc.copy_(running)  # the state carried into the next chunk
        best = F.max_pool2d(sums.view(steps * B, C, H, W), (kh, kw), (sh, sw), (ph, pw),
                            ceil_mode=bool(nd.n("ceil_mode", 0.0)))
        Ho, Wo = best.shape[2], best.shape[3]
        best = best.view(steps, B, C, Ho, Wo)
        out = torch.empty_like(best)
        out[0] = best[0] - prev
        if steps > 1:
            torch.sub(best[1:], best[:-1], out=out[1:])
        prev.copy_(best[-1])
        return out.view(steps * B, C, Ho, Wo)


# =====================================================================================================
# FTBC (conversion/src/ftbc.cpp), vectorized over neurons, sequential over t
# =====================================================================================================

class FtbcHook:
    def __init__(self, ann_outs, alpha, variant):
        self.ann = ann_outs
        self.alpha32 = float(np.float32(alpha))
        self.variant = variant
        self.membrane = {}

    def before_neuron_layer(self, eng, node, x, x_is_static, t0, steps, B):
        neu = eng.neurons[node]
        neu.require_binary("FTBC calibration")
        a = self.ann[node]
        dims = [0] + list(range(2, a.dim()))
        n_avg = float(B * neu.inner)
        a_mean = a.double().sum(dim=dims) / n_avg  # [C]
        v = self.membrane.get(node)
        if v is None:
            v = neu.init_membrane(B)
            self.membrane[node] = v
        bias = neu.nd.tensors["bias"]  # [T, C] float32, updated in place
        sample = list(v.shape[1:])
        s = torch.empty([B] + sample, dtype=torch.float32, device=v.device)
        mask = torch.empty([B] + sample, dtype=torch.bool, device=v.device)
        xv = None if x_is_static else x.view([steps, B] + sample)
        paper = self.variant == "paper"
        for t in range(steps):
            tt = t0 + t
            xt = x if x_is_static else xv[t]
            if paper:
                _step(neu, v, xt, s, mask)
            else:
                v_saved = v.clone()
                _step(neu, v, xt - bias[tt].reshape(neu.bshape), s, mask)
            err = s.double().sum(dim=dims) / n_avg - a_mean
            if paper:
                v.sub_(self.alpha32 * (s - a))
            bias[tt] += (self.alpha32 * err).float()
            if not paper:
                v.copy_(v_saved)
                _step(neu, v, xt - bias[tt].reshape(neu.bshape), s, mask)


def calibrate_ftbc(eng, images_batches, T, alpha=0.5, iters=1, variant="fixed", max_chunk_steps=0,
                   simulate_fn=None):
    """Calibrates eng.model in place (b[t][c] for t < T on every neuron layer)."""
    for neu in eng.neurons.values():
        neu.nd.tensors["bias"] = torch.zeros(T, neu.C, dtype=torch.float32, device=eng.device)
        neu.nd.num["bias_constant"] = 0.0
    for _ in range(iters):
        for images in images_batches:
            _, ann = eng.forward_ann(images, keep=True)
            hook = FtbcHook(ann, alpha, variant)
            if simulate_fn is None:
                eng.simulate(images, T, max_chunk_steps=max_chunk_steps, hook=hook, count_spikes=False)
            else:
                simulate_fn(eng, images, T, hook)


# =====================================================================================================
# Naive reference (for --self-test): every step separately, every neuron/window one at a time
# =====================================================================================================

def naive_simulate(model, images, T, hook=None, record=None):
    """Per-step, per-element transcription of the semantics (numpy float32 scalars)."""
    f32 = np.float32
    nodes = model.nodes
    B = images.shape[0]
    x0 = images.numpy().astype(np.float32)
    if model.mean is not None:
        m = np.asarray(model.mean, np.float32).reshape(-1, 1, 1)
        s = np.asarray(model.std, np.float32).reshape(-1, 1, 1)
        x0 = (x0 - m) / s
    v = {}
    run_sum = {}
    for nd in nodes:
        if nd.type == "neuron":
            th = nd.tensors["threshold"].numpy().reshape(-1)
            C = int(nd.num["channels"])
            v[nd.index] = np.empty([B] + nd.shape, np.float32)
            for c in range(C):
                v[nd.index][:, c] = f32(f32(nd.num["v_init"]) * th[c if th.size > 1 else 0])
        if nd.type == "maxpool2d":
            src = model.input_shape if nd.inputs[0] == -1 else nodes[nd.inputs[0]].shape
            run_sum[nd.index] = (np.zeros([B] + src, np.float32), np.zeros([B] + nd.shape, np.float32))
    K = nodes[-1].shape[0]
    acc = np.zeros((B, K), np.float32)
    preds = np.zeros((T, B), np.int64)
    spikes = np.zeros((len(model.neuron_nodes()), T))
    for t in range(T):
        outs = {}
        k = 0
        for nd in nodes:
            ins = [x0 if j == -1 else outs[j] for j in nd.inputs]
            if nd.type == "neuron":
                if hook is not None:
                    hook(nd, ins[0], t, v[nd.index])
                outs[nd.index] = naive_neuron_step(nd, ins[0], v[nd.index], t)
                spikes[k, t] = np.count_nonzero(outs[nd.index])
                k += 1
            elif nd.type == "maxpool2d":
                outs[nd.index] = naive_maxpool_step(nd, ins[0], run_sum[nd.index])
            else:
                y = Engine.stateless(nd, [torch.from_numpy(np.ascontiguousarray(a)) for a in ins])
                outs[nd.index] = y.numpy()
        if record is not None:
            for i, o in outs.items():
                record.setdefault(i, []).append(np.array(o, copy=True))
        y = outs[nodes[-1].index]
        for b in range(B):
            for c in range(K):
                acc[b, c] = f32(acc[b, c] + y[b, c])
            best = 0
            for c in range(1, K):
                if acc[b, c] > acc[b, best]:
                    best = c
            preds[t, b] = best
    return preds, spikes


def _naive_bias(nd, t, c):
    b = nd.tensors.get("bias")
    if b is None:
        return np.float32(0)
    if nd.num.get("bias_constant", 0.0) != 0.0:
        return np.float32(b[0, c].item())
    return np.float32(b[t, c].item()) if t < b.shape[0] else np.float32(0)


def naive_neuron_step(nd, x, v, t, bias_fn=_naive_bias):
    if nd.str.get("spikes", "binary") != "binary":
        raise ModelError(f"layer '{nd.name}': the naive reference implements binary spikes only")
    f32 = np.float32
    th = nd.tensors["threshold"].numpy().reshape(-1)
    beta = f32(nd.num.get("beta", 1.0))
    lif = nd.str["model"] == "lif"
    zero = nd.str["reset"] == "zero"
    B, C = x.shape[0], x.shape[1]
    xf = x.reshape(B, C, -1)
    vf = v.reshape(B, C, -1)
    s = np.zeros_like(xf)
    for b in range(B):
        for c in range(C):
            theta = f32(th[c if th.size > 1 else 0])
            bias = bias_fn(nd, t, c)
            for i in range(xf.shape[2]):
                vi = f32(beta * vf[b, c, i]) if lif else vf[b, c, i]
                vi = f32(vi + f32(xf[b, c, i] - bias))
                si = theta if vi >= theta else f32(0)
                vf[b, c, i] = (f32(0) if si > 0 else vi) if zero else f32(vi - si)
                s[b, c, i] = si
    return s.reshape(x.shape)


def naive_maxpool_step(nd, x, state):
    run_sum, prev = state
    kh, kw = int(nd.num["kernel_h"]), int(nd.num["kernel_w"])
    sh, sw = int(nd.num["stride_h"]), int(nd.num["stride_w"])
    ph, pw = int(nd.num["pad_h"]), int(nd.num["pad_w"])
    B, C, H, W = x.shape
    run_sum += x  # elementwise float32 adds
    Ho, Wo = (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1
    out = np.zeros((B, C, Ho, Wo), np.float32)
    for b in range(B):
        for c in range(C):
            for oy in range(Ho):
                for ox in range(Wo):
                    best = -np.inf
                    for ky in range(kh):
                        iy = oy * sh - ph + ky
                        if iy < 0 or iy >= H:
                            continue
                        for kx in range(kw):
                            ix = ox * sw - pw + kx
                            if 0 <= ix < W and run_sum[b, c, iy, ix] > best:
                                best = run_sum[b, c, iy, ix]
                    out[b, c, oy, ox] = np.float32(best - prev[b, c, oy, ox])
                    prev[b, c, oy, ox] = best
    return out


def naive_ftbc(model, images_batches, T, alpha, iters, variant):
    """FTBC transcribed from ftbc.cpp loop by loop, on the naive simulation."""
    f32 = np.float32
    alpha32 = f32(alpha)
    eng = Engine(model)
    for nd in model.neuron_nodes():
        nd.tensors["bias"] = torch.zeros(T, int(nd.num["channels"]), dtype=torch.float32)
        nd.num["bias_constant"] = 0.0
    for _ in range(iters):
        for images in images_batches:
            _, ann = eng.forward_ann(images, keep=True)
            local_v = {}

            def hook(nd, x, t, v_engine):
                a = ann[nd.index].numpy()
                B, C = a.shape[0], a.shape[1]
                af = a.reshape(B, C, -1)
                inner = af.shape[2]
                a_mean = [0.0] * C
                for b in range(B):
                    for c in range(C):
                        for i in range(inner):
                            a_mean[c] += float(af[b, c, i])
                a_mean = [m / float(B * inner) for m in a_mean]
                if nd.index not in local_v:
                    th = nd.tensors["threshold"].numpy().reshape(-1)
                    lv = np.empty_like(v_engine)
                    for c in range(C):
                        lv[:, c] = f32(f32(nd.num["v_init"]) * th[c if th.size > 1 else 0])
                    local_v[nd.index] = lv
                lv = local_v[nd.index]
                bias = nd.tensors["bias"]
                paper = variant == "paper"
                saved = lv.copy()
                zero_bias = (lambda n_, t_, c_: f32(0))
                s = naive_neuron_step(nd, x, lv, t, bias_fn=zero_bias if paper else _naive_bias)
                sf = s.reshape(B, C, -1)
                if paper:
                    lvf = lv.reshape(B, C, -1)
                    for b in range(B):
                        for c in range(C):
                            for i in range(inner):
                                lvf[b, c, i] = f32(lvf[b, c, i] - f32(alpha32 * f32(sf[b, c, i] - af[b, c, i])))
                for c in range(C):
                    tot = 0.0
                    for b in range(B):
                        for i in range(inner):
                            tot += float(sf[b, c, i])
                    err = tot / float(B * inner) - a_mean[c]
                    bias[t, c] = float(f32(f32(bias[t, c].item()) + f32(float(alpha32) * err)))
                if not paper:
                    lv[...] = saved
                    naive_neuron_step(nd, x, lv, t)

            naive_simulate(model, images, T, hook=hook)


# =====================================================================================================
# Self-test
# =====================================================================================================

def _dyadic(shape, lo, hi, denom, gen):
    return torch.randint(lo, hi + 1, shape, generator=gen).float() / denom


def random_test_model(seed, variant=0):
    """A small network covering every layer type, with dyadic values (exact float arithmetic)."""
    g = torch.Generator().manual_seed(seed)

    def conv(i, name, inputs, cin, cout, k, s, p, groups=1, bias=True):
        t = {"weight": _dyadic((cout, cin // groups, k, k), -3, 5, 8.0, g)}
        if bias:
            t["bias"] = _dyadic((cout,), -4, 4, 16.0, g)
        return Node(i, "conv2d", name, inputs, {"stride_h": s, "stride_w": s, "pad_h": p, "pad_w": p,
                                                 "groups": groups}, {}, t)

    def pool(i, kind, name, inputs, k, s, p):
        return Node(i, kind, name, inputs, {"kernel_h": k, "kernel_w": k, "stride_h": s, "stride_w": s,
                                             "pad_h": p, "pad_w": p})

    def neuron(i, name, inputs, C, theta, model="if", reset="subtract", act="relu", levels=0, beta=1.0,
               bias_steps=0, bias_constant=False, v_init=0.5):
        t = {"threshold": torch.tensor(theta, dtype=torch.float32).reshape(-1)}
        if bias_steps:
            t["bias"] = _dyadic((bias_steps, C), -2, 2, 16.0, g)
        return Node(i, "neuron", name, inputs,
                    {"channels": C, "levels": levels, "beta": beta, "v_init": v_init,
                     "bias_constant": 1.0 if bias_constant else 0.0},
                    {"model": model, "reset": reset, "activation": act}, t)

    def linear(i, name, inputs, fin, fout):
        return Node(i, "linear", name, inputs, {}, {},
                    {"weight": _dyadic((fout, fin), -3, 5, 8.0, g), "bias": _dyadic((fout,), -4, 4, 16.0, g)})

    if variant == 0:
        nodes = [
            conv(0, "conv1", [-1], 2, 4, 3, 1, 1),                                              # static
            neuron(1, "n1", [0], 4, [0.5, 1.0, 2.0, 1.0], bias_steps=3),                         # IF, per-channel θ
            pool(2, "maxpool2d", "mp", [1], 3, 2, 1),                                           # spiking max pool
            conv(3, "conv2", [2], 4, 4, 3, 1, 1, groups=2),
            neuron(4, "n2", [3], 4, [1.0], model="lif", beta=0.5, reset="zero", act="clip", bias_steps=20),
            conv(5, "short", [-1], 2, 4, 1, 2, 0, bias=False),                                  # static branch
            Node(6, "add", "add", [4, 5]),
            neuron(7, "n3", [6], 4, [1.0], act="qcfs", levels=4, bias_steps=1, bias_constant=True),
            pool(8, "avgpool2d", "ap", [7], 2, 2, 1),
            Node(9, "flatten", "flat", [8]),
            linear(10, "fc1", [9], 36, 8),
            neuron(11, "n4", [10], 8, [2.0], v_init=0.25),
            linear(12, "fc2", [11], 8, 5),
        ]
        return Model([2, 8, 8], nodes, mean=[0.25, 0.5], std=[0.5, 0.25])
    # variant 1: max pooling on the static input, LIF subtract, QCFS per-channel, no preprocessing
    nodes = [
        pool(0, "maxpool2d", "mp0", [-1], 2, 2, 0),
        conv(1, "conv1", [0], 1, 4, 3, 1, 1),
        neuron(2, "n1", [1], 4, [1.0, 0.5, 1.0, 2.0], model="lif", beta=0.75, act="qcfs", levels=2),
        pool(3, "maxpool2d", "mp1", [2], 2, 2, 0),
        Node(4, "flatten", "flat", [3]),
        linear(5, "fc", [4], 16, 4),
        neuron(6, "n2", [5], 4, [1.0], reset="zero", v_init=0.0),
        linear(7, "out", [6], 4, 3),
    ]
    return Model([1, 8, 8], nodes)


def make_test_case(directory, images=256):
    """Writes the self-test networks and dyadic image sets for an exact cross-check with snnc:
    DIR/netV.snn.h5 and DIR/netV_data.h5 (HDF5 `images` float32 N x C x H x W, `labels`), V = 0, 1.
    All values are dyadic rationals, so every sum is exact in float32 in any order: snnc and this
    implementation must agree exactly (accuracy per t, spike counts, FTBC biases with batch sizes
    that are powers of two), whatever their summation order, FMA contraction or GEMM blocking."""
    os.makedirs(directory, exist_ok=True)
    written = []
    for variant in (0, 1):
        model = random_test_model(1234 + variant, variant)
        g = torch.Generator().manual_seed(4321 + variant)
        x = _dyadic([images] + model.input_shape, 0, 16, 16.0, g)
        # labels: the ANN's class scores relative to their mean over the set (varied, and learnable)
        logits = Engine(model).forward_ann(x)
        y = (logits - logits.mean(0)).argmax(1)
        mp = os.path.join(directory, f"net{variant}.snn.h5")
        dp = os.path.join(directory, f"net{variant}_data.h5")
        save_model(model, mp)
        with _h5py().File(dp, "w") as f:
            f.create_dataset("images", data=x.numpy().astype(np.float32))
            f.create_dataset("labels", data=y.numpy().astype(np.int64))
        written += [mp, dp]
    return written


def _clone_model(model):
    nodes = [Node(nd.index, nd.type, nd.name, nd.inputs, nd.num, nd.str,
                  {k: v.clone() for k, v in nd.tensors.items()}) for nd in model.nodes]
    return Model(model.input_shape, nodes, model.mean, model.std, model.metadata)


class DeviceError(Exception):
    pass


def resolve_device(name):
    """torch.device for --device cpu|cuda; raises DeviceError with one clear sentence when CUDA is not usable."""
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            built = torch.version.cuda
            why = (f"this PyTorch {torch.__version__} was built without CUDA" if not built else
                   f"this PyTorch {torch.__version__} (CUDA {built}) finds no usable GPU "
                   f"(torch.cuda.is_available() is False: no GPU, driver or CUDA_VISIBLE_DEVICES)")
            raise DeviceError(f"--device cuda: {why}")
        return torch.device("cuda", torch.cuda.current_device())
    raise DeviceError(f"unknown device '{name}' (expected cpu or cuda)")


def configure_device(device, tf32=False):
    """Float32 semantics on the GPU: no TF32 in convolutions or matmuls unless asked (TF32 rounds inputs
    to 10 mantissa bits and would change spikes), cuDNN autotuning on (shapes repeat every batch)."""
    if device.type == "cuda":
        torch.backends.cudnn.enabled = True
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = bool(tf32)
        torch.backends.cuda.matmul.allow_tf32 = bool(tf32)


def device_name(device):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def self_test(device=torch.device("cpu")):
    """The fast engine runs on `device` (the model and images moved there); the naive reference and the
    file round trip always run on the CPU, and every comparison is exact."""
    torch.set_num_threads(1)
    configure_device(device)
    results = []
    ok = True

    def check(name, cond, detail=""):
        nonlocal ok
        ok &= bool(cond)
        results.append({"check": name, "ok": bool(cond), **({"detail": detail} if detail else {})})
        print(("PASS " if cond else "FAIL ") + name + (f"  ({detail})" if detail else ""), file=sys.stderr)

    # 1. snnc's shuffle re-implementation against libstdc++ itself (when a compiler is present).
    try:
        import subprocess
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "s.cpp")
            with open(src, "w") as f:
                f.write("#include <algorithm>\n#include <cstdio>\n#include <numeric>\n#include <random>\n"
                        "#include <vector>\n#include <cstdlib>\nint main(int c,char**v){long n=atol(v[1]);"
                        "std::vector<long> i(n);std::iota(i.begin(),i.end(),0);"
                        "std::mt19937_64 r(strtoull(v[2],0,10));std::shuffle(i.begin(),i.end(),r);"
                        "for(long k=0;k<n;++k)printf(\"%ld\\n\",i[k]);}\n")
            subprocess.run(["g++", "-O1", "-std=c++17", "-o", os.path.join(d, "s"), src], check=True,
                           capture_output=True)
            for n, seed in ((10, 0), (101, 7), (60000, 0), (60000, 12345)):
                ref = [int(s) for s in subprocess.run([os.path.join(d, "s"), str(n), str(seed)], check=True,
                                                      capture_output=True, text=True).stdout.split()]
                check(f"snnc_shuffle(n={n}, seed={seed}) == libstdc++ std::shuffle", ref == snnc_shuffle(n, seed))
    except (OSError, subprocess.CalledProcessError) as e:
        results.append({"check": "snnc_shuffle vs libstdc++", "ok": None, "detail": f"skipped: {e}"})

    for variant in (0, 1):
        model = random_test_model(1234 + variant, variant)
        g = torch.Generator().manual_seed(99 + variant)
        B = 4
        images = _dyadic([B] + model.input_shape, 0, 16, 16.0, g)
        # 2. file round trips: .snn.h5 (when h5py is there) and the npy export layout
        def same_model(m1, m2):
            return (m1.input_shape == m2.input_shape and m1.mean == m2.mean and m1.std == m2.std and
                    m1.metadata == m2.metadata and len(m1.nodes) == len(m2.nodes) and
                    all(a.type == b.type and a.name == b.name and a.inputs == b.inputs and a.num == b.num and
                        a.str == b.str and a.tensors.keys() == b.tensors.keys() and
                        all(torch.equal(a.tensors[k], b.tensors[k]) for k in a.tensors)
                        for a, b in zip(m1.nodes, m2.nodes)))

        model.metadata = {"source": "torch_reference self-test", "empty": ""}
        with tempfile.TemporaryDirectory() as d:
            try:
                _h5py()
                have_h5py = True
            except ModelError:
                have_h5py = False
            if have_h5py:
                p = os.path.join(d, "m.snn.h5")
                save_model(model, p)
                back = load_model(p)
                check(f"net{variant}: .snn.h5 write/read round trip", same_model(model, back))
                model = back
            else:
                results.append({"check": f"net{variant}: .snn.h5 round trip", "ok": None,
                                "detail": "skipped: no h5py"})
            save_model_npy(model, os.path.join(d, "npy"))
            check(f"net{variant}: npy export write/read round trip",
                  same_model(model, load_model(os.path.join(d, "npy"))))

        # 3. fast vs naive simulation, several chunkings
        T = 7
        eng = Engine(_clone_model(model).to(device))
        images_dev = images.to(device)
        rec_ref = {}
        ref_p, ref_s = naive_simulate(model, images, T, record=rec_ref)
        for chunk in (0, 1, 3):
            rec = {}
            p, s = eng.simulate(images_dev, T, max_chunk_steps=chunk, record=rec)
            p, s = p.cpu(), s.cpu()
            same_nodes = all(np.array_equal(torch.cat(rec[i]).cpu().numpy(), np.concatenate(rec_ref[i]))
                             for i in rec)  # every dynamic node's output at every step
            rates = [round(float(r), 3) for r in
                     ref_s.sum(1) / np.array([B * T * np.prod(nd.shape) for nd in model.neuron_nodes()])]
            check(f"net{variant}: simulate(chunk={chunk or 'all'}) == naive: every dynamic node's output, "
                  f"spike counts, predictions",
                  same_nodes and np.array_equal(p.numpy(), ref_p) and np.array_equal(s.numpy(), ref_s),
                  f"{len(rec)} dynamic nodes, firing rates {rates}")
        # the ANN view against the same graph with torch.nn modules
        logits = eng.forward_ann(images_dev).cpu()
        check(f"net{variant}: ANN view finite and shaped", logits.shape == (B, model.nodes[-1].shape[0]) and
              bool(torch.isfinite(logits).all()))

        # 4. FTBC both variants, fast vs naive transcription (2 batches, 2 iterations, chunked and not)
        batches = [_dyadic([B] + model.input_shape, 0, 16, 16.0, g) for _ in range(2)]
        for ftbc_variant in ("fixed", "paper"):
            m_ref = _clone_model(model)
            naive_ftbc(m_ref, batches, T, 0.5, 2, ftbc_variant)
            for chunk in (0, 3):
                m_fast = _clone_model(model).to(device)
                calibrate_ftbc(Engine(m_fast), [b.to(device) for b in batches], T, 0.5, 2, ftbc_variant,
                               max_chunk_steps=chunk)
                eq = all(torch.equal(a.tensors["bias"], b.tensors["bias"].cpu())
                         for a, b in zip(m_ref.neuron_nodes(), m_fast.neuron_nodes()))
                diff = max(float((a.tensors["bias"] - b.tensors["bias"].cpu()).abs().max())
                           for a, b in zip(m_ref.neuron_nodes(), m_fast.neuron_nodes()))
                nz = sum(int((a.tensors["bias"] != 0).sum()) for a in m_ref.neuron_nodes())
                check(f"net{variant}: FTBC {ftbc_variant} (chunk={chunk or 'all'}) biases == naive",
                      eq, f"max |diff| {diff:g}, nonzero biases {nz}")
            p1, s1 = Engine(m_fast).simulate(images_dev, T)
            p1, s1 = p1.cpu(), s1.cpu()
            p2, s2 = naive_simulate(m_ref, images, T)
            check(f"net{variant}: calibrated ({ftbc_variant}) simulate == naive",
                  np.array_equal(p1.numpy(), p2) and np.array_equal(s1.numpy(), s2))

        # 5. device placement without a GPU: on PyTorch's "meta" device (shapes only, no values) every op
        # that mixes a meta tensor with a CPU tensor fails as it would with a CUDA one, so the engine, the
        # ANN view and FTBC running there show that no tensor is created on the wrong device.
        if device.type == "cpu":
            try:
                m_meta = _clone_model(model).to("meta")
                e_meta = Engine(m_meta)
                x_meta = images.to("meta")
                e_meta.forward_ann(x_meta)
                for chunk in (0, 3):
                    pm, sm = e_meta.simulate(x_meta, T, max_chunk_steps=chunk)
                calibrate_ftbc(e_meta, [x_meta, x_meta], T, 0.5, 1, "fixed", max_chunk_steps=3)
                check(f"net{variant}: engine, ANN view and FTBC on the meta device (no CPU tensor mixed in)",
                      pm.device.type == "meta" and sm.device.type == "meta")
            except NotImplementedError as e:  # an op without a meta kernel in this PyTorch
                results.append({"check": f"net{variant}: meta-device placement", "ok": None,
                                "detail": f"skipped: {str(e).splitlines()[0][:200]}"})
            except RuntimeError as e:
                check(f"net{variant}: engine, ANN view and FTBC on the meta device (no CPU tensor mixed in)", False,
                      str(e).splitlines()[0][:200])
    print(json.dumps({"impl": "pytorch", "self_test": "pass" if ok else "FAIL", "device": device_name(device),
                      "torch_version": torch.__version__, "checks": results}, indent=1))
    return 0 if ok else 1


# =====================================================================================================
# CLI
# =====================================================================================================

def evaluate(args):
    device = resolve_device(args.device)
    configure_device(device, args.tf32)
    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    model = load_model(args.model)
    if args.clear_bias:
        model.clear_biases()
    model.to(device)
    eng = Engine(model)
    images, labels = load_dataset(args.data, args.limit)
    if images.shape[0] == 0:
        raise ValueError(f"dataset '{args.data}' is empty")
    K = model.nodes[-1].shape[0]
    if int(labels.max()) >= K:
        raise ValueError(f"dataset labels go up to {int(labels.max())} but the network has {K} outputs")
    if list(images.shape[1:]) != model.input_shape:
        raise ValueError(f"dataset '{args.data}' has images {list(images.shape[1:])} but the network takes "
                         f"{model.input_shape}")
    images, labels = images.to(device), labels.to(device)  # data loading and transfer are not timed
    N, T, bs = images.shape[0], args.T, args.batch_size
    warmup = args.warmup if args.warmup is not None else (1 if device.type == "cuda" else 0)
    out = {"impl": "pytorch", "torch_version": torch.__version__, "threads": args.threads,
           "device": device_name(device), "device_type": device.type,
           "model": args.model, "data": args.data}
    if device.type == "cuda":
        out.update({"cuda_version": torch.version.cuda, "cudnn_version": torch.backends.cudnn.version(),
                    "cudnn_benchmark": True, "tf32": bool(args.tf32)})

    calib_seconds = 0.0
    calib_info = None
    if args.calibrate != "none":
        cx, _ = load_dataset(args.calib_data, 0)
        n = args.batches * args.calib_batch_size
        if n > cx.shape[0]:
            raise ValueError(f"{args.batches} x {args.calib_batch_size} calibration images, but "
                             f"'{args.calib_data}' has {cx.shape[0]}")
        if args.calib_snnc_seed is not None:
            order = torch.tensor(snnc_shuffle(cx.shape[0], args.calib_snnc_seed)[:n])
            how = f"snnc's seeded shuffle (std::mt19937_64 seed {args.calib_snnc_seed})"
        elif args.calib_shuffle_seed is not None:
            order = torch.from_numpy(np.random.RandomState(args.calib_shuffle_seed).permutation(cx.shape[0])[:n])
            how = f"numpy RandomState({args.calib_shuffle_seed}).permutation"
        else:
            order = torch.arange(n)
            how = "first images"
        batches = [cx[order[b * args.calib_batch_size:(b + 1) * args.calib_batch_size]].contiguous().to(device)
                   for b in range(args.batches)]
        variant = "paper" if args.calibrate == "ftbc-paper" else "fixed"
        with torch.inference_mode():
            synchronize(device)
            t0 = time.perf_counter()
            calibrate_ftbc(eng, batches, T, args.alpha, args.iters, variant)
            synchronize(device)
            calib_seconds = time.perf_counter() - t0
        calib_info = {"method": args.calibrate, "variant": variant, "alpha": args.alpha, "batches": args.batches,
                      "batch_size": args.calib_batch_size, "iters": args.iters, "T": T,
                      "data": args.calib_data, "images": how}
        if args.save_model:
            model.metadata.update({"calibration": args.calibrate, "calibration.T": str(T)})
            save_model(model, args.save_model)

    # Warm-up (not timed): every batch shape the timed loops will see (a full batch and, if N is not a
    # multiple of the batch size, the last partial one), so that allocations and cuDNN's algorithm
    # search (benchmark mode autotunes each new shape) stay out of the timed region.
    warm_slices = [(0, min(bs, N))]
    if N > bs and N % bs:
        warm_slices.append((N - N % bs, N))
    with torch.inference_mode():
        for _ in range(warmup):
            for a, b in warm_slices:
                eng.forward_ann(images[a:b])
                eng.simulate(images[a:b], T, max_chunk_steps=args.chunk_steps, memory_budget=args.memory_budget)
        synchronize(device)

        correct_ann = torch.zeros((), dtype=torch.int64, device=device)
        t0 = time.perf_counter()
        for b0 in range(0, N, bs):
            logits = eng.forward_ann(images[b0:b0 + bs])
            correct_ann += (logits.argmax(1) == labels[b0:b0 + bs]).sum()
        synchronize(device)
        ann_seconds = time.perf_counter() - t0

        correct = torch.zeros(T, dtype=torch.int64, device=device)
        spikes = None
        synchronize(device)
        t0 = time.perf_counter()
        for b0 in range(0, N, bs):
            x = images[b0:b0 + bs]
            preds, s = eng.simulate(x, T, max_chunk_steps=args.chunk_steps, memory_budget=args.memory_budget)
            correct += (preds == labels[b0:b0 + bs].unsqueeze(0)).sum(1)
            spikes = s if spikes is None else spikes + s
        synchronize(device)
        seconds = time.perf_counter() - t0
    correct_ann = int(correct_ann.cpu())
    correct = correct.cpu()
    spikes = spikes.cpu()

    neurons = [int(np.prod(nd.shape)) for nd in model.neuron_nodes()]
    per_t = {nd.name: (spikes[k] / (N * neurons[k])).tolist() for k, nd in enumerate(model.neuron_nodes())}
    rates = {name: float(np.mean(r)) for name, r in per_t.items()}
    out.update({
        "ann_accuracy": 100.0 * correct_ann / N,
        "accuracy": [100.0 * float(c) / N for c in correct],
        "images": N,
        "timesteps": T,
        "batch_size": bs,
        "chunk_steps": eng.chunk_steps_for(T, min(bs, N), args.chunk_steps, args.memory_budget),
        "memory_budget": args.memory_budget,
        "warmup_batches": warmup * len(warm_slices),
        "seconds": seconds,
        "image_timesteps_per_second": N * T / max(seconds, 1e-9),
        "ann_seconds": ann_seconds,
        "calibration_seconds": calib_seconds,
        "calibration": calib_info,
        "biases": "cleared" if args.clear_bias else ("ftbc (this run)" if calib_info else "as stored in the model"),
        "firing_rate": rates,
        "firing_rate_per_t": per_t,
    })
    print(json.dumps(out, indent=2))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", help="model: a .snn.h5 file, or a directory written by bench/export_npy")
    p.add_argument("--self-test", action="store_true", help="check the fast engine against a naive one")
    p.add_argument("--make-test-case", metavar="DIR", default=None,
                   help="write dyadic test networks + image sets for an exact comparison with snnc, then exit")
    p.add_argument("--data", default="fashion-mnist:test",
                   help="fashion-mnist:test|train, an IDX images file, an HDF5 file, or npy:DIR (images.npy, labels.npy)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="where PyTorch runs (cuda: model and data on the GPU, cuDNN, float32 without TF32)")
    p.add_argument("--tf32", action="store_true",
                   help="allow TF32 in cuDNN convolutions and cuBLAS matmuls on the GPU (changes results)")
    p.add_argument("--warmup", type=int, default=None,
                   help="untimed warm-up passes over each batch shape (default: 1 on cuda, 0 on cpu)")
    p.add_argument("--T", type=int, default=32, help="timesteps (accuracy reported for every t <= T)")
    p.add_argument("--limit", type=int, default=0, help="first N images only (0 = all)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--chunk-steps", type=int, default=0, help="timesteps per chunk (0 = from --memory-budget)")
    p.add_argument("--memory-budget", type=int, default=1 << 30, help="bytes of activations per chunk")
    p.add_argument("--calibrate", choices=["none", "ftbc", "ftbc-paper"], default="none")
    p.add_argument("--calib-data", default="fashion-mnist:train")
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--calib-batch-size", type=int, default=128)
    p.add_argument("--iters", type=int, default=1)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--calib-shuffle-seed", type=int, default=None,
                   help="calibration images from a numpy permutation with this seed (default: the first ones)")
    g.add_argument("--calib-snnc-seed", type=int, default=None,
                   help="calibration images exactly as snnc chooses them with --calib-seed S")
    p.add_argument("--clear-bias", action="store_true", help="ignore biases stored in the model")
    p.add_argument("--save-model", default=None, help="write the (calibrated) model to this .snn.h5 file")
    a = p.parse_args(argv)
    try:
        device = resolve_device(a.device)
    except DeviceError as e:
        print(f"torch_reference: error: {e}", file=sys.stderr)
        return 1
    if a.self_test:
        return self_test(device)
    if a.make_test_case:
        print(json.dumps({"written": make_test_case(a.make_test_case)}))
        return 0
    if not a.model:
        p.error("a model file is needed (or --self-test)")
    for name in ("T", "batch_size", "threads", "batches", "calib_batch_size", "iters"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if a.warmup is not None and a.warmup < 0:
        p.error("--warmup must be at least 0")
    if a.limit < 0:
        p.error("--limit must be at least 0")
    if not (a.alpha > 0 and math.isfinite(a.alpha)):
        p.error("--alpha must be positive")
    try:
        return evaluate(a)
    except (ModelError, DeviceError, ValueError, OSError, KeyError) as e:
        print(f"torch_reference: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
