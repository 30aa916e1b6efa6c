"""snnc sweep checkpoints (snn/sweep_checkpoint.hpp) for tests: read one, write one, or make an edited one's
digest match again (what a crafted file would do, so that tests reach the checks behind the digest).
Used by tests/fuzz/make_seeds.py and tests/reliability/cases_checkpoint.py. Needs h5py."""
import hashlib
import struct

import h5py
import numpy as np

FORMAT = "snnc-sweep-checkpoint"
VERSION = 2


def digest(job, parts):
    """The digest snnc keeps in the file: SHA-256 over the format, version, job text and every part's
    numbers, little-endian, parts in byte order of their names. parts: {key: (next_block, blocks,
    seconds, sums)}."""
    h = hashlib.sha256()
    h.update(FORMAT.encode() + b"\0" + struct.pack("<q", VERSION))
    job = job.encode()
    h.update(struct.pack("<Q", len(job)) + job)
    for key in sorted(parts, key=lambda k: k.encode()):
        next_block, blocks, seconds, sums = parts[key]
        name = key.encode()
        h.update(struct.pack("<Q", len(name)) + name + struct.pack("<ddd", next_block, blocks, seconds))
        h.update(struct.pack("<Q", len(sums)) + np.asarray(sums, dtype="<f8").tobytes())
    return h.hexdigest()


def read(path):
    """(job text, parts) of a checkpoint, as stored."""
    with h5py.File(path, "r") as f:
        job = f.attrs["job"]
        job = job.decode() if isinstance(job, bytes) else str(job)
        parts = {k: (float(g.attrs["next_block"]), float(g.attrs["blocks"]), float(g.attrs["seconds"]),
                     g["sums"][()].astype(np.float64)) for k, g in f["parts"].items()}
    return job, parts


def write(path, job, parts):
    """A checkpoint holding `parts` for `job`, with a matching digest."""
    with h5py.File(path, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = np.int64(VERSION)
        f.attrs["job"] = job
        f.attrs["digest"] = digest(job, parts)
        for key, (next_block, blocks, seconds, sums) in parts.items():
            g = f.create_group(f"parts/{key}")
            g.attrs["next_block"] = float(next_block)
            g.attrs["blocks"] = float(blocks)
            g.attrs["seconds"] = float(seconds)
            g.create_dataset("sums", data=np.asarray(sums, dtype=np.float64))


def redigest(path):
    """Makes the digest of an edited checkpoint match its contents again, in place."""
    job, parts = read(path)
    with h5py.File(path, "r+") as f:
        f.attrs["digest"] = digest(job, parts)
