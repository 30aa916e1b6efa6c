#!/usr/bin/env python3
"""Under mpirun every rank must read the same bytes (issue 36): ranks that see different files under one
name (a stale copy on one node) are refused, by content digest, before any work, with one message from
rank 0 naming the option whose contents differ; the same files on every rank run. Two ranks in two
working directories (mpirun's MPMD form, -wdir) stand for two nodes. Small IDX data written here and the
tests/fixtures model: seconds. Exits 77 (skipped) without the TorchScript importer."""
import argparse, os, random, shutil, struct, subprocess, sys

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def write_idx(images_path, n, seed):
    rng = random.Random(seed)
    with open(images_path, "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + rng.randbytes(n * 784))
    with open(images_path.replace("images-idx3", "labels-idx1"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))


def main():
    ap = argparse.ArgumentParser()
    for name in ("--snnc", "--mpirun", "--work", "--repo"):
        ap.add_argument(name, required=True)
    a = ap.parse_args()
    a.snnc = os.path.abspath(a.snnc)
    shutil.rmtree(a.work, ignore_errors=True)
    nodes = [os.path.join(a.work, n) for n in ("node0", "node1")]
    for n in nodes:
        os.makedirs(n)
    write_idx(os.path.join(nodes[0], "d-images-idx3-ubyte"), 48, seed=1)
    p = subprocess.run([a.snnc, "convert", os.path.join(a.repo, "tests/fixtures/fmnist_tiny.pt"), "-o",
                        os.path.join(nodes[0], "m.snn.h5"), "--data", os.path.join(nodes[0], "d-images-idx3-ubyte"),
                        "--mean", "0.286", "--std", "0.353", "--no-check", "-q"], capture_output=True, text=True)
    if p.returncode != 0:
        print("skipped: snnc convert failed (built without the TorchScript importer?):", p.stderr.strip()[:200])
        return 77
    for name in ("m.snn.h5", "d-images-idx3-ubyte", "d-labels-idx1-ubyte"):
        shutil.copy2(os.path.join(nodes[0], name), os.path.join(nodes[1], name))

    def on_two_nodes(*args):
        """Rank 0 in node0, rank 1 in node1, the same command (relative paths: each node's own files)."""
        cmd = [a.mpirun, "--oversubscribe"]
        for i, n in enumerate(nodes):
            cmd += ([":"] if i else []) + ["-np", "1", "-wdir", n, a.snnc, *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)

    calib = ["calibrate", "m.snn.h5", "-o", "cal.snn.h5", "--method", "ftbc", "--data", "c-images-idx3-ubyte",
             "--T", "2", "--batches", "1", "--batch-size", "8", "--threads", "1", "-q"]
    sweep = ["sweep", "m.snn.h5", "--data", "d-images-idx3-ubyte", "--T", "2", "--batch-size", "8", "--threads", "1",
             "--compare", "none,ftbc", "--calib-data", "c-images-idx3-ubyte", "--calib-batch-size", "8",
             "--batches", "1", "-q", "--json"]
    # The same calibration images on both nodes: runs.
    for n in nodes:
        write_idx(os.path.join(n, "c-images-idx3-ubyte"), 32, seed=2)
    p = on_two_nodes(*sweep)
    check(p.returncode == 0, f"sweep --compare, same --calib-data on both ranks: runs (exit {p.returncode}) "
                             f"{p.stderr.strip()[-300:]}")
    p = on_two_nodes(*calib)
    check(p.returncode == 0, f"calibrate, same --data on both ranks: runs (exit {p.returncode})")
    if os.path.exists(os.path.join(nodes[0], "cal.snn.h5")):
        os.remove(os.path.join(nodes[0], "cal.snn.h5"))

    # node1's copy differs in one pixel: same name, same size, other contents.
    path = os.path.join(nodes[1], "c-images-idx3-ubyte")
    data = bytearray(open(path, "rb").read())
    data[16 + 5 * 784 + 300] ^= 0x55
    open(path, "wb").write(bytes(data))
    for what, args, option in (("sweep --compare", sweep, "--calib-data"), ("calibrate", calib, "--data")):
        p = on_two_nodes(*args)
        check(p.returncode != 0, f"{what}: ranks seeing different {option} files under one name: refused")
        check(p.stderr.count("snnc: error") == 1 and "rank 1" in p.stderr and option in p.stderr and
              "contents" in p.stderr and "MPI_ABORT" not in p.stderr,
              f"... one message, from rank 0, naming rank 1 and {option}'s contents: {p.stderr.strip()[:300]}")
        check(not os.path.exists(os.path.join(nodes[0], "cal.snn.h5")), "... and no output")
    # Other --T on one rank: the option named, once.
    base = [a.snnc, "sweep", "m.snn.h5", "--data", "d-images-idx3-ubyte", "--threads", "1", "-q", "--T"]
    p = subprocess.run([a.mpirun, "--oversubscribe", "-np", "1", "-wdir", nodes[0], *base, "2", ":",
                        "-np", "1", "-wdir", nodes[0], *base, "3"], capture_output=True, text=True, env=ENV, timeout=120)
    check(p.returncode != 0 and p.stderr.count("snnc: error") == 1 and "--T 3, rank 0 with 2" in p.stderr,
          f"ranks given other --T: one message naming --T: {p.stderr.strip()[:300]}")
    print(f"\n{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
