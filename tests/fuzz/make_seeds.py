#!/usr/bin/env python3
"""Writes the committed seed corpora of the dataset fuzz targets into corpus/<target>/ (small files:
the fuzzer mutates them; they only need to reach the readers' interesting paths). Model-file seeds come
from make_model_seeds (a C++ program built with the fuzz targets); TorchScript seeds are the committed
tests/fixtures/*.pt, copied in by .ci/sanitize-and-fuzz. Re-run after changing a reader's format:
    .venv/bin/python tests/fuzz/make_seeds.py
"""
import gzip
import os
import struct

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def out(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def idx_images(n, h, w):
    return struct.pack(">IIII", 0x00000803, n, h, w) + bytes((i * 37) % 256 for i in range(n * h * w))


def idx_labels(n):
    return struct.pack(">II", 0x00000801, n) + bytes(i % 10 for i in range(n))


def idx_input(limit, labels, images):
    # fuzz_idx.cpp's layout: [limit][labels length LE16][labels][images]
    return bytes([limit]) + struct.pack("<H", len(labels)) + labels + images


# IDX: raw, gzip, both, a limit, and a labels-count mismatch.
out("fuzz_idx", "raw", idx_input(0, idx_labels(3), idx_images(3, 4, 5)))
out("fuzz_idx", "gzip", idx_input(0, gzip.compress(idx_labels(4)), gzip.compress(idx_images(4, 3, 3))))
out("fuzz_idx", "limit", idx_input(2, idx_labels(5), gzip.compress(idx_images(5, 2, 2))))
out("fuzz_idx", "mismatch", idx_input(0, idx_labels(2), idx_images(3, 2, 2)))

# CIFAR: [flags][records]; a record is label byte(s) + 3x32x32 pixels.
px = bytes((i * 7) % 256 for i in range(3 * 32 * 32))
out("fuzz_cifar", "cifar10", bytes([0]) + bytes([6]) + px + bytes([9]) + px)
out("fuzz_cifar", "cifar100_limit", bytes([1 | 2]) + bytes([3, 42]) + px + bytes([19, 7]) + px)
out("fuzz_cifar", "bad_label", bytes([0]) + bytes([200]) + px)

# HDF5 datasets: uint8 and float32 images, int64 labels, and a chunked + deflated + fletcher32 file.
def h5(name, images, labels, **kw):
    path = os.path.join(HERE, "corpus", "fuzz_hdf5_dataset", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("images", data=images, **kw)
        f.create_dataset("labels", data=labels)


rng = np.random.default_rng(0)
h5("uint8.h5", rng.integers(0, 255, (3, 1, 4, 4), dtype=np.uint8), np.array([0, 1, 2], dtype=np.int64))
h5("float32.h5", rng.random((2, 2, 3, 3), dtype=np.float32), np.array([1, 0], dtype=np.int32))
h5("chunked.h5", rng.integers(0, 255, (4, 1, 3, 3), dtype=np.uint8), np.array([3, 2, 1, 0], dtype=np.uint8),
   chunks=(2, 1, 3, 3), compression="gzip", fletcher32=True)

# HDF5 storage rules (snn/hdf5_untrusted.hpp): files whose values live elsewhere (external raw storage,
# a virtual dataset, external and soft links) and one that keeps its own, for fuzz_hdf5_storage.
def storage_seed(name, build):
    path = os.path.join(HERE, "corpus", "fuzz_hdf5_storage", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("labels", data=np.array([0, 1], dtype=np.int64))
        build(f)


storage_seed("own.h5", lambda f: f.create_dataset("images", data=np.ones((2, 1, 2, 2), np.float32), chunks=(1, 1, 2, 2),
                                                   fletcher32=True))
storage_seed("external.h5", lambda f: f.create_dataset("images", shape=(2, 1, 2, 2), dtype=np.uint8,
                                                        external=[("pixels.raw", 0, 8)]))
storage_seed("soft_link.h5", lambda f: f.__setitem__("images", h5py.SoftLink("/labels")))
storage_seed("external_link.h5", lambda f: f.__setitem__("images", h5py.ExternalLink("other.h5", "/images")))


def virtual(f):
    layout = h5py.VirtualLayout(shape=(2,), dtype=np.int64)
    layout[...] = h5py.VirtualSource("other.h5", "labels", shape=(2,))
    f.create_virtual_dataset("images", layout)


storage_seed("virtual.h5", virtual)
print("seeds written under", os.path.join(HERE, "corpus"))


# Sweep checkpoints (snn/sweep_checkpoint.hpp), with matching digests and the fuzz target's job, so that
# mutations reach the value checks: one part, and two parts that fit the target's layout for "ftbc".
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(HERE))
import sweep_checkpoint_file  # noqa: E402

CKPT_JOB = "o\tjob\tfuzz-job\n"
ckpt_dir = os.path.join(HERE, "corpus", "fuzz_sweep_checkpoint")
os.makedirs(ckpt_dir, exist_ok=True)
sweep_checkpoint_file.write(os.path.join(ckpt_dir, "one_part.h5"), CKPT_JOB,
                            {"model": (2, 5, 0.25, [3.0, 4.0, 120.0, 7.5])})
sweep_checkpoint_file.write(os.path.join(ckpt_dir, "two_parts.h5"), CKPT_JOB,
                            {"model": (4, 4, 1.0, [30.0, 38.0, 400.0, 2.0, 0.0, 9.0]),
                             "ftbc": (2, 4, 0.5, [17.0, 20.0, 210.0, 1.0, 0.5, 4.0])})
