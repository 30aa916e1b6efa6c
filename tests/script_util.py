"""Shared by the end-to-end test scripts run from ctest (tests/mpi, tests/nir): their arguments, the skip
when Debian's Fashion-MNIST is missing, a clean work directory, running commands, and ok/FAIL lines."""
import argparse, gzip, os, shutil, subprocess

FMNIST = "/usr/share/datasets/fashion-mnist"
SKIP = 77  # ctest's SKIP_RETURN_CODE


class Script:
    def __init__(self, extra_args=()):
        ap = argparse.ArgumentParser()
        for name in ("--snnc", "--work", "--repo", *extra_args):
            ap.add_argument(name, required=True)
        self.args = ap.parse_args()
        self.failures = []
        self.skipped = not os.path.isdir(FMNIST)
        if self.skipped:
            print("skipped: Fashion-MNIST not installed (Debian package dataset-fashion-mnist)")
            return
        shutil.rmtree(self.args.work, ignore_errors=True)
        os.makedirs(self.args.work)

    def path(self, name):
        return os.path.join(self.args.work, name)

    def check(self, cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            self.failures.append(what)

    def finish(self):
        print(f"\n{len(self.failures)} failure(s)")
        return 1 if self.failures else 0


def run(cmd, expect_ok=True, timeout=600, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if expect_ok and p.returncode != 0:
        raise SystemExit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


def read_idx(path):
    """An IDX file (gzipped, as Debian's dataset-fashion-mnist ships it) as a NumPy array."""
    import numpy as np
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)
