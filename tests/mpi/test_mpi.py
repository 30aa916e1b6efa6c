#!/usr/bin/env python3
"""snnc under mpirun (issue 11): eval, sweep and calibrate give the same numbers bit for bit on 1, 2 and 3
processes; a bad file on one rank ends every rank quickly with one message and no output; a sweep killed
midway (SIGKILL of one rank) resumes from its --checkpoint on another number of processes and ends with
the numbers of an uninterrupted run. Runs oversubscribed on a 2-core machine. The model is the examples'
ReLU ResNet (convolutions, residual adds, strided 1x1 shortcuts, pooling, linear readout), converted here.
Exits 77 (skipped) without Debian's Fashion-MNIST or without the TorchScript importer."""
import json, os, signal, subprocess, sys, time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import script_util  # noqa: E402
from script_util import SKIP, Script  # noqa: E402

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
# Wall times, the command line, and the model file's checksum over its metadata (which holds them).
TIMES = {"seconds", "image_timesteps_per_second", "output", "processes", "calibration_seconds", "command_line",
         "calibration.seconds", "calibration.command_line", "crc32"}


def run(cmd, expect_ok=True, timeout=600):
    return script_util.run(cmd, expect_ok, timeout, env=ENV)


def h5_contents(path):
    """Every dataset and attribute of an HDF5 file, times and provenance left out."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            for k, v in obj.attrs.items():
                if k not in TIMES:
                    out[f"{name}@{k}"] = v
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[()]
        for k, v in f.attrs.items():
            if k not in TIMES:
                out[f"@{k}"] = v
        f.visititems(visit)
    return out


def same_contents(a, b):
    if a.keys() != b.keys():
        return sorted(set(a) ^ set(b))
    return [k for k in a if not np.array_equal(np.asarray(a[k]), np.asarray(b[k]))]


def strip_times(j):
    if isinstance(j, dict):
        return {k: strip_times(v) for k, v in j.items() if k not in TIMES}
    return j


def main():
    script = Script(extra_args=("--mpirun",))
    if script.skipped:
        return SKIP
    a, w, check = script.args, script.path, script.check
    snnc = a.snnc

    def mpi(n, *args):
        return [a.mpirun, "--oversubscribe", "-np", str(n), snnc, *args]

    model = w("resnet.snn.h5")
    p = run([snnc, "convert", os.path.join(a.repo, "examples/models/resnet_relu.pt"), "-o", model,
             "--data", "fashion-mnist:train", "--limit", "512", "--mean", "0.2860", "--std", "0.3530", "-q"],
            expect_ok=False)
    if p.returncode != 0 and "without" in p.stderr:
        print("skipped: snnc built without the TorchScript importer")
        return SKIP
    check(p.returncode == 0, "convert the examples ResNet")

    # --- eval and sweep: 1, 2, 3 processes --------------------------------------------------------------
    common = ["--data", "fashion-mnist:test", "--limit", "500", "--batch-size", "64", "--threads", "1", "--json", "-q"]
    sweeps, evals = {}, {}
    for n in (1, 2, 3):
        p = run(mpi(n, "sweep", model, "--T", "8", "-o", w(f"sweep{n}.h5"), *common))
        sweeps[n] = json.loads(p.stdout)
        evals[n] = json.loads(run(mpi(n, "eval", model, "--T", "6", *common)).stdout)
    check(sweeps[1]["images"] == 500 and len(sweeps[1]["accuracy"]) == 8, "sweep on 500 images, T = 8")
    for n in (2, 3):
        check(sweeps[n].get("processes") == n, f"sweep -np {n} reports {n} processes")
        check(strip_times(sweeps[n]) == strip_times(sweeps[1]), f"sweep JSON of {n} processes == 1 process")
        diff = same_contents(h5_contents(w("sweep1.h5")), h5_contents(w(f"sweep{n}.h5")))
        check(not diff, f"sweep.h5 of {n} processes == 1 process, bit for bit {diff[:4]}")
        check(strip_times(evals[n]) == strip_times(evals[1]), f"eval of {n} processes == 1 process")

    # --- calibrate: the biases of 1, 2 (and 3) processes --------------------------------------------------
    for method, ns in (("ftbc", (1, 2, 3)), ("ftbc-paper", (1, 2)), ("ftbc-exact", (1, 2)), ("light", (1, 2)),
                       ("ftbc-auto", (1, 2))):  # auto: thresholds from an ANN pass on every process, held-out sweeps
        for n in ns:
            run(mpi(n, "calibrate", model, "-o", w(f"{method}{n}.snn.h5"), "--method", method, "--T", "4",
                    "--batches", "2", "--batch-size", "48", "--threads", "1", "-q"))
        ref = h5_contents(w(f"{method}1.snn.h5"))
        for n in ns[1:]:
            diff = same_contents(ref, h5_contents(w(f"{method}{n}.snn.h5")))
            check(not diff, f"calibrate --method {method}: {n} processes == 1 process, bit for bit {diff[:4]}")

    # --- sweep --compare: calibrations inside the sweep, data-parallel too -------------------------------
    for n in (1, 2):
        run(mpi(n, "sweep", model, "--T", "4", "--compare", "none,ftbc", "--batches", "1", "--calib-batch-size", "32",
                "-o", w(f"compare{n}.h5"), *common[:3], "200", *common[4:]))
    diff = same_contents(h5_contents(w("compare1.h5")), h5_contents(w("compare2.h5")))
    check(not diff, f"sweep --compare none,ftbc: 2 processes == 1 process, bit for bit {diff[:4]}")

    # --- a bad file or option on one rank ends every rank, one message, no output -------------------------
    out = w("never.h5")
    t0 = time.time()
    p = run([a.mpirun, "--oversubscribe", "-np", "1", snnc, "sweep", model, "--T", "4", "-o", out, *common, ":",
             "-np", "1", snnc, "sweep", model, "--T", "4", "-o", out, *common[:1], w("missing.h5"), *common[2:]],
            expect_ok=False, timeout=120)
    took = time.time() - t0
    check(p.returncode != 0, "a missing --data file on rank 1: mpirun exits non-zero")
    check(took < 30, f"... within seconds ({took:.1f} s)")
    check(p.stderr.count("snnc: error") == 1 and "missing.h5" in p.stderr, "... one snnc message, naming the file")
    check(not os.path.exists(out), "... and no output file")
    p = run(mpi(3, "sweep", model, "--T", "0", *common), expect_ok=False, timeout=120)
    check(p.returncode != 0 and p.stderr.count("snnc: error") == 1, "a bad option on 3 ranks: one message")
    p = run(mpi(3, "calibrate", model, "-o", out, "--T", "2", "--batches", "1", "--batch-size", "2"),
            expect_ok=False, timeout=120)
    check(p.returncode != 0 and p.stderr.count("snnc: error") == 1 and "--batch-size 2" in p.stderr and not os.path.exists(out),
          "calibration batches smaller than the process count: one message naming --batch-size, no output")
    p = run(mpi(2, "info", model), expect_ok=False, timeout=120)
    check(p.returncode != 0 and "one process" in p.stderr, "info refuses to run in more than one process")

    # --- checkpoint: kill a 2-process sweep midway, resume on 3 ------------------------------------------
    args = ["sweep", model, "--T", "16", "--data", "fashion-mnist:test", "--limit", "500", "--batch-size", "10",
            "--threads", "1", "-q"]
    full, resumed, ck = w("full.h5"), w("resumed.h5"), w("sweep.ckpt.h5")
    run(mpi(1, *args, "-o", full))
    proc = subprocess.Popen(mpi(2, *args, "-o", resumed, "--checkpoint", ck), env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    done_before_kill = 0
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        try:
            with h5py.File(ck, "r") as f:
                done_before_kill = int(f["parts/model"].attrs["next_block"])
        except (OSError, KeyError):
            pass
        if done_before_kill >= 4:
            break
        time.sleep(0.05)
    ranks = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    check(proc.poll() is None and len(ranks) == 2, f"checkpointed 2-process sweep running ({len(ranks)} ranks)")
    if ranks:
        os.kill(int(ranks[-1]), signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    check(proc.returncode != 0, "killing one rank ends the job with an error")
    check(not os.path.exists(resumed), "... leaving no output file")
    with h5py.File(ck, "r") as f:
        saved, blocks = int(f["parts/model"].attrs["next_block"]), int(f["parts/model"].attrs["blocks"])
    check(4 <= saved < blocks, f"... and a checkpoint midway ({saved} of {blocks} batches)")
    before = open(ck, "rb").read()
    p = run(mpi(2, *[x if x != "16" else "12" for x in args], "-o", resumed, "--checkpoint", ck), expect_ok=False)
    check(p.returncode != 0 and ck in p.stderr and "another job" in p.stderr,
          "a checkpoint of another job (other --T) is refused, naming it")
    check(open(ck, "rb").read() == before, "... and left as it was")
    run(mpi(3, *args, "-o", resumed, "--checkpoint", ck))
    diff = same_contents(h5_contents(full), h5_contents(resumed))
    check(not diff, f"resumed on 3 processes == uninterrupted run, bit for bit {diff[:4]}")
    check(not os.path.exists(ck), "the checkpoint is removed once the results are written")
    with open(ck, "wb") as f:
        f.write(b"not a checkpoint at all")
    p = run([snnc, *args, "--checkpoint", ck], expect_ok=False)
    check(p.returncode == 1 and ck in p.stderr and open(ck, "rb").read() == b"not a checkpoint at all",
          "a damaged checkpoint: error naming it, file untouched")

    return script.finish()


if __name__ == "__main__":
    sys.exit(main())
