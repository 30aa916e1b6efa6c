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
print("seeds written under", os.path.join(HERE, "corpus"))
