#!/usr/bin/env python3
"""Hostile and careless-user cases replayed against a built `snnc` (issue 9, reliability).

    python3 tests/reliability/run_cases.py --snnc build/tools/snnc [--filter REGEX] [--table out.md]
                                           [--work DIR] [--keep] [--list] [-v]

Each case runs in a fresh directory of its own, with its own copies of the small inputs (a tiny
converted model m.snn.h5, the TorchScript m.pt it came from, a 64-image IDX set d-images-idx3-ubyte and,
with h5py, the same images as d.h5), under a timeout (a hang is a failure) and an 8 GiB address-space
limit (a runaway allocation must not take the machine down). For every case it checks:

- the exit status: 1 for a clear error, 0 for a correct result; never a signal, never 2 ("internal
  error"), never one of CLI11's codes (100-120);
- the message: regular expressions (case-insensitive) that must match stderr, naming the file, option or
  layer concerned; no C++ exception text (bad_alloc, "terminate called"), no HDF5 error stack dump;
- the files: every file present before the command is unchanged afterwards (sha256; symlinks keep their
  target; FIFOs and device nodes stay what they were) unless it is the output of a successful command;
  no new file is left by a failed command; no hidden temporary file (`.NAME.tmp-*`) is ever left;
- case-specific checks (the output loads with `snnc info`, no "0 neurons", ...).

It prints a markdown table (case | command | expected | got | result) and a summary, and exits 1 when a
case fails, 77 when every case was skipped (no prerequisites), else 0. Cases that need root (tmpfs
mounts, device nodes), h5py/numpy or the TorchScript importer are skipped, with the reason, when those are
not there. Python 3 standard library only; h5py/numpy and torch (the project's venv, .venv/bin/python,
which CTest runs it with) are used when importable.
"""

import argparse
import concurrent.futures
import hashlib
import os
import random
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
EXIT_SKIP = 77
AS_LIMIT = 8 << 30  # address space of each snnc run

try:
    import numpy as np
    import h5py
    HAVE_H5PY = True
except Exception:  # noqa: BLE001 - any import problem means "not available"
    HAVE_H5PY = False

VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
if not HAVE_H5PY and os.path.abspath(sys.executable) != VENV_PYTHON \
        and os.path.exists(VENV_PYTHON) and not os.environ.get("SNNC_RELIABILITY_REEXEC"):
    # `python3` may be another interpreter (Debian's, pyenv) without h5py: the project's venv has it.
    os.environ["SNNC_RELIABILITY_REEXEC"] = "1"
    os.execv(VENV_PYTHON, [VENV_PYTHON] + sys.argv)

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except Exception:  # noqa: BLE001
    HAVE_TORCH = False


class Skip(Exception):
    """Raised by a case's setup when its prerequisites are missing."""


# ------------------------------------------------------------------------------------------------ env

class Env:
    snnc = ""
    work = ""
    assets = ""
    verbose = False
    is_root = os.geteuid() == 0
    can_mount = False
    can_convert = False  # snnc convert works (built with LibTorch) and made the model
    model_ok = False     # m.snn.h5 exists
    layers = []          # [(group, type, name, [datasets])] of m.snn.h5 (needs h5py)
    durations = {}       # baseline seconds of the commands the signal cases interrupt
    mounts = []          # mount points to undo
    api_example = ""
    sanitized = False    # snnc is an ASan build: no address-space cap


ENV = Env()


def log(*a):
    if ENV.verbose:
        print(*a, file=sys.stderr, flush=True)


def is_sanitized(binary):
    """ASan reserves terabytes of shadow address space at start-up: an address-space cap kills it."""
    try:
        with open(binary, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def limit_resources():
    if not ENV.sanitized:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
        except (ValueError, OSError):
            pass
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def snnc_cmd(args):
    return [ENV.snnc] + [str(a) for a in args]


def run_snnc(args, cwd, timeout=60):
    return subprocess.run(snnc_cmd(args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limit_resources, errors="replace")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def snapshot(root):
    """{relative path: description} of everything under root (not following symlinks)."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                snap[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                snap[rel] = ("file", sha256(p))
            elif stat.S_ISDIR(st.st_mode):
                snap[rel] = ("dir",)
            elif stat.S_ISFIFO(st.st_mode):
                snap[rel] = ("fifo",)
            elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                snap[rel] = ("dev", st.st_rdev)
            else:
                snap[rel] = ("other", stat.S_IFMT(st.st_mode))
    return snap


def is_temp_leftover(rel):
    base = os.path.basename(rel)
    return ".tmp-" in base or base.startswith(".") and base.endswith((".tmp", ".part"))


# ------------------------------------------------------------------------------------------------ data

def idx_labels_path(images):
    return images.replace("images-idx3", "labels-idx1")


def write_idx(images_path, n, h=28, w=28, labels=None, seed=0, declared_n=None):
    rng = random.Random(seed)
    with open(images_path, "wb") as f:
        f.write(struct.pack(">IIII", 0x803, declared_n if declared_n is not None else n, h, w))
        f.write(rng.randbytes(n * h * w))
    if labels is None:
        labels = [i % 10 for i in range(n)]
    with open(idx_labels_path(images_path), "wb") as f:
        f.write(struct.pack(">II", 0x801, len(labels)))
        f.write(bytes(labels))


def write_h5(path, images, labels, **kw):
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=images, **kw)
        f.create_dataset("labels", data=labels)


def idx_images_as_float(path, n):
    with open(path, "rb") as f:
        f.read(16)
        raw = f.read(n * 784)
    return (np.frombuffer(raw, dtype=np.uint8).reshape(n, 1, 28, 28).astype(np.float32) / 255.0 - 0.286) / 0.353


def model_layers(path):
    """[(group, type, name, [dataset names])] of a .snn.h5 model, in file order."""
    out = []
    with h5py.File(path, "r") as f:
        for g in sorted(f["layers"].keys()):
            grp = f["layers"][g]
            a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in grp.attrs.items()}
            out.append((g, str(a.get("type", "")), str(a.get("name", "")),
                        [k for k in grp.keys() if isinstance(grp[k], h5py.Dataset)]))
    return out


def find_layer_dataset(kind, names):
    """(group, layer name, dataset) of the first layer whose type contains `kind` holding one of `names`."""
    for g, t, n, ds in ENV.layers:
        if kind in t.lower():
            for want in names:
                for d in ds:
                    if d.lower() == want or want in d.lower():
                        return g, n, d
    raise Skip(f"m.snn.h5 has no '{kind}' layer with a dataset named {names} (layers: "
               f"{[(t, ds) for _, t, _, ds in ENV.layers]})")


def layer_named(name, group):
    """A regex for a message naming layer `name` (file group `group`, index from its number)."""
    alts = [re.escape(f"'{name}'"), re.escape(f'"{name}"'), r"layer\s+" + re.escape(name) + r"\b",
            re.escape(f"layers/{group}")]
    if group.isdigit():
        alts.append(r"layer\s*#\s*%d\b" % int(group))
    return "(?:" + "|".join(alts) + ")"


def poke_dataset(model, group, dataset, value=None, flip=False, index=0):
    """Writes `value` into element `index` of /layers/group/dataset with h5py, or flips a byte of its
    stored data in place (raw file write at the dataset's offset: what a disk or a bad copy would do)."""
    path = f"layers/{group}/{dataset}"
    if flip:
        with h5py.File(model, "r") as f:
            ds = f[path]
            off = ds.id.get_offset()
            size = ds.id.get_storage_size()
            if off is None and ds.chunks:  # chunked (e.g. with a Fletcher-32 filter): the first chunk
                info = ds.id.get_chunk_info(0)
                off, size = info.byte_offset, info.size
            if off is None:
                raise Skip(f"{path}: no data offset to flip a byte at")
        with open(model, "r+b") as f:
            # A byte of element `index` (not the filter's checksum at the end of a chunk).
            pos = off + min(max(0, size - 5), 4 * index + 2)
            f.seek(pos)
            b = f.read(1)
            f.seek(pos)
            f.write(bytes([b[0] ^ 0x40]))
        return
    with h5py.File(model, "r+") as f:
        ds = f[path]
        a = ds[()]
        flat = a.reshape(-1)
        flat[index] = value
        ds[...] = flat.reshape(a.shape)


# ------------------------------------------------------------------------------------------------ cases

class Case:
    """One command and what must hold after it."""

    def __init__(self, name, cmd, expect=1, msg=(), setup=None, outputs=(), timeout=30, needs=(),
                 short=False, check=None, expected_text="", runner=None, teardown=None, verify_outputs=True,
                 changes_ok=(), group=""):
        self.name = name
        self.cmd = cmd                    # list of args after `snnc`, or ("bash", script) with $SNNC
        self.expect = {expect} if isinstance(expect, int) else set(expect)
        self.msg = list(msg)              # regexes that must all match stderr
        self.setup = setup                # setup(dir) -> may raise Skip
        self.outputs = list(outputs)      # files the command writes when it succeeds
        self.timeout = timeout
        self.needs = set(needs)           # "h5py", "convert", "root", "mount", "torch"
        self.short = short                # option errors: short message, no huge numbers
        self.check = check                # check(dir, result) -> [problems]
        self.expected_text = expected_text
        self.runner = runner              # runner(dir, case) -> Result (default: one subprocess)
        self.teardown = teardown
        self.verify_outputs = verify_outputs
        self.changes_ok = list(changes_ok)  # inputs the case itself may change (handled by `check`)
        self.group = group


class Result:
    def __init__(self, rc=None, stdout="", stderr="", timed_out=False, seconds=0.0, notes=None):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.seconds = seconds
        self.notes = notes or []


def default_runner(d, case):
    if case.cmd and case.cmd[0] == "bash":
        argv = ["bash", "-c", case.cmd[1]]
    else:
        argv = snnc_cmd([a.replace("{D}", d).replace("{A}", ENV.assets) for a in case.cmd])
    env = dict(os.environ, SNNC=ENV.snnc, D=d, A=ENV.assets)
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         preexec_fn=limit_resources, start_new_session=True)
    try:
        out, err = p.communicate(timeout=case.timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        timed_out = True
    return Result(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"), timed_out,
                  time.monotonic() - t0)


def first_line(stderr):
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower():
            return l
    return lines[0] if lines else ""


def signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def generic_problems(case, res, before, after, d):
    probs = []
    if res.timed_out:
        probs.append(f"no answer within {case.timeout} s (hang)")
        return probs
    rc = res.rc
    want = "/".join(str(e) for e in sorted(case.expect))
    if rc is None:
        probs.append("did not run")
    elif rc < 0 and rc not in case.expect:
        probs.append(f"killed by {signal_name(rc)}")
    elif rc == 2 and 2 not in case.expect:
        probs.append(f"internal error (exit 2), expected {want}")
    elif 100 <= rc <= 120 and rc not in case.expect:
        probs.append(f"exit {rc} (a CLI11 code), expected {want}")
    elif rc not in case.expect:
        probs.append(f"exit {rc}, expected {want}")
    if "internal error" in res.stderr:
        probs.append("says 'internal error'")
    for rx in case.msg:
        if not re.search(rx, res.stderr, re.I | re.S):
            probs.append(f"stderr lacks /{rx}/")
    for rx, what in ((r"bad_alloc", "std::bad_alloc"), (r"terminate called", "terminate called"),
                     (r"HDF5-DIAG", "HDF5 error stack"), (r"Traceback \(most recent", "Python traceback"),
                     (r"Segmentation fault|core dumped", "crash"),
                     (r"ERROR: (Address|Leak)Sanitizer|runtime error:", "a sanitizer report")):
        if re.search(rx, res.stderr):
            probs.append(f"stderr shows {what}")
    if case.short:
        line = first_line(res.stderr)
        if len(line) > 300:
            probs.append(f"message is {len(line)} characters long")
        if "1797693" in res.stderr or re.search(r"\d{25,}", res.stderr):
            probs.append("message prints a huge number (e.g. DBL_MAX's 309 digits)")
    # Files.
    ok_run = rc == 0
    managed = set(case.changes_ok)
    for rel, desc in before.items():
        if rel in managed:
            continue
        now = after.get(rel)
        if rel in case.outputs and ok_run:
            continue
        if now is None:
            probs.append(f"'{rel}' was removed")
        elif now != desc:
            probs.append(f"'{rel}' was changed" + (" (an input!)" if rel not in case.outputs else
                                                  " by a failed command"))
    for rel in sorted(set(after) - set(before)):
        if rel in managed:
            continue
        if is_temp_leftover(rel):
            probs.append(f"left a temporary file '{rel}'")
        elif rel in case.outputs and ok_run:
            continue
        elif rel in case.outputs:
            probs.append(f"failed but left the output '{rel}'")
        else:
            probs.append(f"left an unexpected file '{rel}'")
    if ok_run and 0 in case.expect and case.verify_outputs:
        for rel in case.outputs:
            p = os.path.join(d, rel)
            if not os.path.exists(p):
                probs.append(f"succeeded but wrote no '{rel}'")
            elif rel.endswith(".snn.h5"):
                q = run_snnc(["info", p], d)
                if q.returncode != 0:
                    probs.append(f"'{rel}' does not load: {first_line(q.stderr)[:120]}")
    return probs


def expected_summary(case):
    if case.expected_text:
        return case.expected_text
    parts = ["exit " + "/".join(str(e) for e in sorted(case.expect))]
    if case.msg:
        parts.append("stderr ~ " + ", ".join("/" + m + "/" for m in case.msg))
    return "; ".join(parts)


# ---- helpers used by many cases

def A(name):
    return os.path.join(ENV.assets, name)


def copy_inputs(d):
    for name in ("m.snn.h5", "m.pt", "d-images-idx3-ubyte", "d-labels-idx1-ubyte", "d.h5"):
        if os.path.exists(A(name)):
            shutil.copy2(A(name), os.path.join(d, name))


MOUNTS_LOCK = threading.Lock()


def mount_tmpfs(path, opts):
    os.makedirs(path, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path], capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip(f"cannot mount a tmpfs ({p.stderr.strip()[:80]})")
    with MOUNTS_LOCK:
        ENV.mounts.append(path)


def umount_all_under(d):
    with MOUNTS_LOCK:
        mine = [m for m in ENV.mounts if m.startswith(d + os.sep)]
        for m in mine:
            ENV.mounts.remove(m)
    for m in mine[::-1]:
        subprocess.run(["umount", "-l", m], capture_output=True)


def fill_up(mount, leave=4096):
    """Fills a tmpfs until `leave` bytes are left."""
    filler = os.path.join(mount, "filler")
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    size = os.path.getsize(filler)
    os.truncate(filler, max(0, size - leave))


def calib_args(out, extra=()):
    # --method ftbc unless a case names one: these cases are about files and options, and 64 images are
    # too few for ftbc-auto's held-out split.
    method = [] if "--method" in extra else ["--method", "ftbc"]
    return ["calibrate", "m.snn.h5", "-o", out, *method, "--data", "d-images-idx3-ubyte", "--T", "4", "--batches", "1",
            "--batch-size", "16", "--iters", "1", "--quiet"] + list(extra)


def sweep_args(extra=(), data="d-images-idx3-ubyte"):
    return ["sweep", "m.snn.h5", "--data", data, "--T", "4", "--limit", "32", "--quiet"] + list(extra)


def convert_args(out, model="m.pt", extra=()):
    return ["convert", model, "-o", out, "--data", "d-images-idx3-ubyte", "--mean", "0.286", "--std", "0.353",
            "--quiet"] + list(extra)


def info_ok(d, rel):
    p = run_snnc(["info", os.path.join(d, rel)], d)
    return p.returncode == 0


# ------------------------------------------------------------------------------------------------ groups

def cases_data_loss():
    R = r"refus"
    cs = []
    cs.append(Case("convert -o its own input", convert_args("m.pt"), msg=[R, r"m\.pt"], needs={"convert"},
                   expected_text="exit 1, refuses naming m.pt; m.pt unchanged"))
    cs.append(Case("convert -o the --data file", convert_args("d-images-idx3-ubyte"), msg=[R, r"d-images-idx3-ubyte"],
                   needs={"convert"}))
    cs.append(Case("sweep -o the model", sweep_args(["-o", "m.snn.h5"]), msg=[R, r"m\.snn\.h5"]))
    cs.append(Case("sweep -o the --data file (.h5)", sweep_args(["-o", "d.h5"], data="d.h5"), msg=[R, r"d\.h5"],
                   needs={"h5py"}))
    cs.append(Case("calibrate -o its own input", calib_args("m.snn.h5"), msg=[R, r"m\.snn\.h5"]))
    cs.append(Case("calibrate -o the --data file (.h5)",
                   ["calibrate", "m.snn.h5", "-o", "d.h5", "--data", "d.h5", "--T", "4", "--batches", "1",
                    "--batch-size", "16", "--quiet"], msg=[R, r"d\.h5"], needs={"h5py"}))

    def mk_symlink(d):
        os.symlink("m.snn.h5", os.path.join(d, "link.snn.h5"))

    cs.append(Case("calibrate -o a symlink to the input", calib_args("link.snn.h5"), setup=mk_symlink,
                   msg=[R, r"m\.snn\.h5|link\.snn\.h5"]))

    def mk_hardlink(d):
        os.link(os.path.join(d, "m.snn.h5"), os.path.join(d, "hard.snn.h5"))

    cs.append(Case("calibrate -o a hard link to the input", calib_args("hard.snn.h5"), setup=mk_hardlink,
                   msg=[R, r"m\.snn\.h5|hard\.snn\.h5"]))
    cs.append(Case("calibrate ./m.snn.h5 -o /abs/m.snn.h5",
                   ["calibrate", "./m.snn.h5", "-o", "{D}/m.snn.h5", "--data", "d-images-idx3-ubyte", "--T", "4",
                    "--batches", "1", "--batch-size", "16", "--quiet"], msg=[R, r"m\.snn\.h5"]))

    def mk_sub(d):
        os.mkdir(os.path.join(d, "sub"))

    cs.append(Case("calibrate -o sub/../m.snn.h5", calib_args("sub/../m.snn.h5"), setup=mk_sub,
                   msg=[R, r"m\.snn\.h5"]))
    cs.append(Case("sweep --data d.h5 -o ./d.h5", sweep_args(["-o", "./d.h5"], data="d.h5"), msg=[R, r"d\.h5"],
                   needs={"h5py"}))
    cs.append(Case("sweep --compare, -o the --calib-data file",
                   sweep_args(["--compare", "none,ftbc", "--calib-data", "d.h5", "--batches", "1",
                               "--calib-batch-size", "16", "-o", "d.h5"]), msg=[R, r"d\.h5"], needs={"h5py"}))
    for c in cs:
        c.group = "data loss"
    return cs


def big_data_args():
    # Work that takes minutes if it is started: the checks must come before it.
    return ["--data", A("big-images-idx3-ubyte"), "--T", "64", "--batches", "100", "--batch-size", "128",
            "--iters", "3"]


def cases_output_paths():
    cs = []
    big = big_data_args()
    cs.append(Case("calibrate -o into a missing directory",
                   ["calibrate", "m.snn.h5", "-o", "nodir/out.snn.h5"] + big,
                   msg=[r"nodir", r"No such file or directory|does not exist"], outputs=["nodir/out.snn.h5"],
                   timeout=10, expected_text="exit 1 within 10 s (before the work), names nodir + reason"))
    cs.append(Case("sweep -o into a missing directory",
                   ["sweep", "m.snn.h5", "--data", A("big-images-idx3-ubyte"), "--T", "256", "-o", "nodir/s.h5"],
                   msg=[r"nodir", r"No such file or directory|does not exist"], timeout=10,
                   expected_text="exit 1 within 10 s (before the sweep), names nodir + reason"))
    cs.append(Case("convert -o into a missing directory", convert_args("nodir/x.snn.h5"),
                   msg=[r"nodir", r"No such file or directory|does not exist"], needs={"convert"}, timeout=10))

    def mk_dir(d):
        os.mkdir(os.path.join(d, "outdir"))

    cs.append(Case("calibrate -o an existing directory", ["calibrate", "m.snn.h5", "-o", "outdir"] + big,
                   setup=mk_dir, msg=[r"outdir", r"is a directory"], timeout=10))
    cs.append(Case("calibrate -o dir/ (trailing slash)", ["calibrate", "m.snn.h5", "-o", "outdir/"] + big,
                   setup=mk_dir, msg=[r"outdir", r"is a directory|not a file|file name"], timeout=10))
    cs.append(Case("sweep -o an existing directory",
                   ["sweep", "m.snn.h5", "--data", A("big-images-idx3-ubyte"), "--T", "256", "-o", "outdir"],
                   setup=mk_dir, msg=[r"outdir", r"is a directory"], timeout=10))
    cs.append(Case("calibrate -o '' (empty name)", ["calibrate", "m.snn.h5", "-o", ""] + big,
                   msg=[r"-o|--out|empty|file name"], timeout=10))

    def mk_ro(d):
        ro = os.path.join(d, "ro")
        if ENV.is_root:
            if not ENV.can_mount:
                raise Skip("root without permission to mount a read-only tmpfs (chmod does not bind root)")
            mount_tmpfs(ro, "size=1m")
            if subprocess.run(["mount", "-o", "remount,ro", ro], capture_output=True).returncode != 0:
                raise Skip("cannot remount the tmpfs read-only")
        else:
            os.mkdir(ro)
            os.chmod(ro, 0o555)

    for cmd, what in ((["calibrate", "m.snn.h5", "-o", "ro/out.snn.h5"] + big, "calibrate"),
                      (["sweep", "m.snn.h5", "--data", A("big-images-idx3-ubyte"), "--T", "256", "-o", "ro/s.h5"],
                       "sweep")):
        cs.append(Case(f"{what} -o into a read-only directory", cmd, setup=mk_ro,
                       teardown=umount_all_under, msg=[r"ro/|'ro'|\bro\b", r"Read-only file system|Permission denied"],
                       timeout=10, expected_text="exit 1 within 10 s, names ro/ + 'Read-only file system' or "
                                                 "'Permission denied' (root: a read-only tmpfs)"))
    cs.append(Case("calibrate -o a very long (250 char) file name",
                   calib_args("L" * 242 + ".snn.h5"), expect=0, outputs=["L" * 242 + ".snn.h5"],
                   expected_text="exit 0 (a legal name: the temporary name must not be longer than NAME_MAX)"))
    cs.append(Case("calibrate -o a 300 char file name", calib_args("L" * 293 + ".snn.h5"),
                   msg=[r"File name too long|too long"], expected_text="exit 1, 'File name too long'"))

    def mk_devnull(d):
        if not ENV.is_root:
            raise Skip("mknod needs root")
        os.mknod(os.path.join(d, "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))

    cs.append(Case("sweep -o a name with spaces and non-ASCII", sweep_args(["-o", "my sweep (1) – é.h5"]), expect=0,
                   outputs=["my sweep (1) – é.h5"], expected_text="exit 0, the file is written under that name"))

    def mk_spaced(d):
        shutil.copy2(os.path.join(d, "m.snn.h5"), os.path.join(d, "my model é.snn.h5"))

    cs.append(Case("calibrate a model named with spaces/non-ASCII",
                   ["calibrate", "my model é.snn.h5", "-o", "out é.snn.h5", "--method", "ftbc", "--data", "d-images-idx3-ubyte", "--T", "4",
                    "--batches", "1", "--batch-size", "16", "--quiet"], setup=mk_spaced, expect=0,
                   outputs=["out é.snn.h5"]))
    cs.append(Case("sweep -o a character device (./null, like /dev/null)", sweep_args(["-o", "null"]),
                   setup=mk_devnull, expect=(0, 1), msg=[],
                   expected_text="exit 0 or 1; the device node is still a device afterwards (not replaced by a file)"))
    for c in cs:
        c.group = "output paths"
    return cs


def cases_full_disk():
    cs = []

    def mk_full(d, with_old=True, leave=4096):
        if not ENV.can_mount:
            raise Skip("mounting a tmpfs is not permitted here")
        size = os.path.getsize(A("m.snn.h5"))
        full = os.path.join(d, "full")
        mount_tmpfs(full, "size=%dk" % max(64, (size * 2 + 16384) // 1024 + 8))
        if with_old:
            shutil.copy2(A("m.snn.h5"), os.path.join(full, "target.snn.h5"))
        fill_up(full, leave)

    def no_target(d, res):
        return [] if not os.path.exists(os.path.join(d, "full/s.h5")) else ["a file was left at full/s.h5"]

    cs.append(Case("calibrate -o onto a full tmpfs (old target present)", calib_args("full/target.snn.h5"),
                   setup=mk_full, teardown=umount_all_under, msg=[r"target\.snn\.h5", r"No space left on device"],
                   outputs=["full/target.snn.h5"],
                   expected_text="exit 1, names full/target.snn.h5 + 'No space left on device'; old target intact, "
                                 "no temp file"))
    cs.append(Case("sweep -o onto a full tmpfs", sweep_args(["-o", "full/s.h5"]),
                   setup=lambda d: mk_full(d, with_old=False, leave=0), teardown=umount_all_under,
                   msg=[r"s\.h5", r"No space left on device"], outputs=["full/s.h5"], check=no_target))
    cs.append(Case("convert -o onto a full tmpfs", convert_args("full/target.snn.h5"), setup=mk_full,
                   teardown=umount_all_under, msg=[r"target\.snn\.h5", r"No space left on device"],
                   outputs=["full/target.snn.h5"], needs={"convert"}))

    def mk_old(d):
        shutil.copy2(A("m.snn.h5"), os.path.join(d, "target.snn.h5"))

    ulim = 'trap "" XFSZ; ulimit -f 8; exec "$SNNC" '
    cs.append(Case("calibrate under ulimit -f 8 (EFBIG)",
                   ("bash", ulim + " ".join(calib_args("target.snn.h5"))), setup=mk_old,
                   msg=[r"target\.snn\.h5", r"File too large|No space left"], outputs=["target.snn.h5"],
                   expected_text="exit 1, names target.snn.h5 + 'File too large'; old target intact, no temp file"))
    cs.append(Case("sweep -o under ulimit -f 8 (EFBIG)",
                   ("bash", ulim + " ".join(sweep_args(["-o", "s.h5"]))),
                   msg=[r"s\.h5", r"File too large|No space left"], outputs=["s.h5"]))
    cs.append(Case("convert under ulimit -f 8 (EFBIG)",
                   ("bash", ulim + " ".join(convert_args("target.snn.h5"))), setup=mk_old,
                   msg=[r"target\.snn\.h5", r"File too large|No space left"], outputs=["target.snn.h5"],
                   needs={"convert"}))
    for c in cs:
        c.group = "full disk"
    return cs


# ---- signals and concurrency

def signal_runner(sig, frac, kind):
    def run(d, case):
        args = {"calibrate": SIG_CALIB, "sweep": SIG_SWEEP, "convert": SIG_CONVERT}[kind]("target")
        base = ENV.durations.get(kind)
        if not base:
            raise Skip(f"no baseline run of {kind}")
        delay = base * frac
        t0 = time.monotonic()
        p = subprocess.Popen(snnc_cmd(args), cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=limit_resources, start_new_session=True)
        time.sleep(delay)
        sent = p.poll() is None
        if sent:
            os.kill(p.pid, sig)
        try:
            out, err = p.communicate(timeout=case.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            timed_out = True
        notes = [f"{signal.Signals(sig).name} at {delay:.2f} s" + ("" if sent else " (already finished)")]
        return Result(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"), timed_out,
                      time.monotonic() - t0, notes)
    return run


def target_name(kind):
    return "target.h5" if kind == "sweep" else "target.snn.h5"


SIG_CALIB = lambda t: ["calibrate", "m.snn.h5", "-o", t + ".snn.h5", "--data", "d-images-idx3-ubyte", "--T", "8",  # noqa: E731
                       "--batches", "2", "--batch-size", "16", "--iters", "2", "--quiet"]
SIG_SWEEP = lambda t: ["sweep", "m.snn.h5", "--data", "d-images-idx3-ubyte", "--T", "32", "--quiet", "-o", t + ".h5"]  # noqa: E731
SIG_CONVERT = lambda t: convert_args(t + ".snn.h5")  # noqa: E731


def signal_check(kind, sig):
    target = target_name(kind)

    def check(d, res):
        probs = []
        path = os.path.join(d, target)
        old = os.path.join(d, "old-copy")
        if os.path.exists(path):
            same_as_old = os.path.exists(old) and sha256(path) == sha256(old)
            if same_as_old:
                res.notes.append("target: the old version, intact")
            elif kind == "sweep":
                try:
                    with h5py.File(path, "r") as f:
                        ok = "methods" in f or len(f.keys()) > 0
                except Exception:  # noqa: BLE001
                    ok = False if HAVE_H5PY else True
                res.notes.append("target: a new complete file" if ok else "target: unreadable")
                if not ok:
                    probs.append("the target is a broken file")
            elif info_ok(d, target):
                res.notes.append("target: a new complete model")
            else:
                probs.append("the target is neither the old version nor a loadable new one")
        else:
            if os.path.exists(old):
                probs.append("the old target is gone")
            else:
                res.notes.append("target: absent")
        left = [f for f in os.listdir(d) if is_temp_leftover(f)]
        if left:
            if sig == signal.SIGKILL:
                res.notes.append("after SIGKILL left: " + ", ".join(left))
            else:
                probs.append("left temporary file(s): " + ", ".join(left))
        elif sig == signal.SIGKILL:
            res.notes.append("after SIGKILL: no leftover")
        return probs
    return check


def cases_signals():
    cs = []
    # Fractions of a baseline run: early (loading), middle (computing), late (writing, or just done).
    plan = [("calibrate", signal.SIGINT, (0.3, 0.6, 0.9)), ("calibrate", signal.SIGTERM, (0.5, 0.95)),
            ("calibrate", signal.SIGKILL, (0.9,)),
            ("convert", signal.SIGINT, (0.5, 0.95)), ("convert", signal.SIGTERM, (0.9,)),
            ("convert", signal.SIGKILL, (0.9,)),
            ("sweep", signal.SIGINT, (0.5, 0.95)), ("sweep", signal.SIGTERM, (0.9,)), ("sweep", signal.SIGKILL, (0.9,))]
    for kind, sig, fracs in plan:
        for frac in fracs:
            target = target_name(kind)

            def setup(d, kind=kind, target=target):
                if kind != "sweep":  # an older good version at the target
                    shutil.copy2(A("m.snn.h5"), os.path.join(d, target))
                    shutil.copy2(A("m.snn.h5"), os.path.join(d, "old-copy"))

            args = {"calibrate": SIG_CALIB, "sweep": SIG_SWEEP, "convert": SIG_CONVERT}[kind]("target")
            cs.append(Case(f"{signal.Signals(sig).name} during {kind} -o at {int(frac * 100)}%", args,
                           expect=(0, 1, 130, 128 + sig, -sig), setup=setup, runner=signal_runner(sig, frac, kind),
                           check=signal_check(kind, sig), changes_ok=[target],
                           needs={"convert"} if kind == "convert" else set(), timeout=60, verify_outputs=False,
                           expected_text="dies by the signal or exits 1/130; target absent, old and intact, or "
                                         "complete; no .tmp- file (SIGKILL: reported)"))
            if sig == signal.SIGKILL:
                cs[-1].changes_ok.append("*tmp")  # leftovers after SIGKILL are reported, not failed
    for c in cs:
        c.group = "signals"
    return cs


def concurrent_runner(d, case):
    args = calib_args("same.snn.h5")
    t0 = time.monotonic()
    ps = [subprocess.Popen(snnc_cmd(args), cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           preexec_fn=limit_resources, start_new_session=True) for _ in range(4)]
    outs = []
    timed_out = False
    for p in ps:
        try:
            o, e = p.communicate(timeout=case.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            o, e = p.communicate()
            timed_out = True
        outs.append((p.returncode, e.decode(errors="replace")))
    rcs = [rc for rc, _ in outs]
    worst = next((rc for rc in rcs if rc not in (0, 1)), None)
    errs = "\n".join(e for _, e in outs if e.strip())
    res = Result(worst if worst is not None else (0 if 0 in rcs else 1), "", errs, timed_out, time.monotonic() - t0,
                 [f"exits {rcs}"])
    res.all_rcs = rcs
    return res


def concurrent_check(d, res):
    probs = []
    if any(rc not in (0, 1) for rc in getattr(res, "all_rcs", [])):
        probs.append(f"exit statuses {res.all_rcs}")
    if 0 not in getattr(res, "all_rcs", []):
        probs.append("no writer succeeded")
    if not os.path.exists(os.path.join(d, "same.snn.h5")):
        probs.append("no same.snn.h5 at the end")
    elif not info_ok(d, "same.snn.h5"):
        probs.append("same.snn.h5 does not load")
    return probs


def cases_concurrency():
    c = Case("4 x calibrate -o same.snn.h5 at once", calib_args("same.snn.h5"), expect=(0, 1),
             runner=concurrent_runner, check=concurrent_check, outputs=["same.snn.h5"], timeout=90,
             expected_text="each exits 0 or 1 cleanly; same.snn.h5 loads; no leftovers")
    c.group = "concurrency"
    return [c]


# ---- corrupt inputs

def truncate_copy(d, src, dst, length):
    with open(os.path.join(d, src), "rb") as f:
        data = f.read()
    n = length(len(data)) if callable(length) else length
    with open(os.path.join(d, dst), "wb") as f:
        f.write(data[:n])


def pt_tensor_entry(path):
    """(offset of the data of the largest data/ entry, its size) in a TorchScript zip."""
    with zipfile.ZipFile(path) as z:
        entries = [i for i in z.infolist() if "/data/" in i.filename and i.compress_type == zipfile.ZIP_STORED]
        if not entries:
            raise Skip("no stored tensor data entry in the .pt")
        info = max(entries, key=lambda i: i.file_size)
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        hdr = f.read(30)
        name_len, extra_len = struct.unpack("<HH", hdr[26:30])
    return info.header_offset + 30 + name_len + extra_len, info.file_size, info.filename


def cases_corrupt():
    cs = []
    for label, length, cmds in (("first 100 bytes", 100, ("info",)), ("a quarter", lambda n: n // 4, ("info",)),
                                ("half", lambda n: n // 2, ("info", "sweep")),
                                ("all but the last byte", lambda n: n - 1, ("info", "sweep"))):
        for cmd in cmds:
            args = ["info", "cut.snn.h5"] if cmd == "info" else ["sweep", "cut.snn.h5", "--data",
                                                                  "d-images-idx3-ubyte", "--T", "4", "--quiet"]
            cs.append(Case(f"{cmd} of a .snn.h5 truncated to {label}", args,
                           setup=lambda d, length=length: truncate_copy(d, "m.snn.h5", "cut.snn.h5", length),
                           msg=[r"cut\.snn\.h5", r"truncat|corrupt|cannot read|not an HDF5"]))

    def flip_weight(d):
        g, name, ds = find_layer_dataset("conv", ["weight", "kernel"])
        poke_dataset(os.path.join(d, "m.snn.h5"), g, ds, flip=True, index=3)
        return g, name

    def flip_case(cmd):
        state = {}

        def setup(d):
            state["g"], state["name"] = flip_weight(d)

        def check(d, res):
            rx = layer_named(state["name"], state["g"])
            return [] if re.search(rx, res.stderr) else [f"does not name the layer ('{state['name']}')"]
        return setup, check

    for cmd in ("sweep", "info"):
        setup, check = flip_case(cmd)
        args = ["sweep", "m.snn.h5", "--data", "d-images-idx3-ubyte", "--T", "4", "--quiet"] if cmd == "sweep" \
            else ["info", "m.snn.h5"]
        cs.append(Case(f"{cmd}: a byte flipped in a conv weight of m.snn.h5", args, setup=setup, check=check,
                       needs={"h5py"}, msg=[r"checksum|corrupt", r"m\.snn\.h5"],
                       expected_text="exit 1, 'checksum'/'corrupt', names m.snn.h5 and the layer",
                       changes_ok=[]))

    def flip_pt(d):
        p = os.path.join(d, "m.pt")
        off, size, _ = pt_tensor_entry(p)
        with open(p, "r+b") as f:
            f.seek(off + size // 2)
            b = f.read(1)
            f.seek(off + size // 2)
            f.write(bytes([b[0] ^ 0x10]))

    cs.append(Case("convert a .pt with a bit flipped in tensor data", convert_args("out.snn.h5"), setup=flip_pt,
                   msg=[r"CRC|corrupt|checksum", r"m\.pt"], needs={"convert"}, outputs=["out.snn.h5"]))
    for label, length in (("half", lambda n: n // 2), ("all but the last 100 bytes", lambda n: n - 100)):
        cs.append(Case(f"convert a .pt truncated to {label}", convert_args("out.snn.h5", model="cut.pt"),
                       setup=lambda d, length=length: truncate_copy(d, "m.pt", "cut.pt", length),
                       msg=[r"cut\.pt", r"truncat|corrupt|zip|archive|cannot read"], needs={"convert"},
                       outputs=["out.snn.h5"]))

    def mk_dirs(d):
        for n in ("dir.snn.h5", "dir.pt", "dir.h5", "dir-images-idx3-ubyte"):
            os.mkdir(os.path.join(d, n))

    cs.append(Case("info of a directory", ["info", "dir.snn.h5"], setup=mk_dirs, msg=[r"dir\.snn\.h5", r"directory"]))
    cs.append(Case("sweep of a directory model", ["sweep", "dir.snn.h5", "--data", "d-images-idx3-ubyte", "--T", "4"],
                   setup=mk_dirs, msg=[r"dir\.snn\.h5", r"directory"]))
    cs.append(Case("convert of a directory", convert_args("out.snn.h5", model="dir.pt"), setup=mk_dirs,
                   msg=[r"dir\.pt", r"directory"], needs={"convert"}, outputs=["out.snn.h5"]))
    cs.append(Case("sweep --data a directory (.h5 name)", sweep_args(data="dir.h5"), setup=mk_dirs,
                   msg=[r"dir\.h5", r"directory"]))
    cs.append(Case("sweep --data a directory (IDX name)", sweep_args(data="dir-images-idx3-ubyte"), setup=mk_dirs,
                   msg=[r"dir-images-idx3-ubyte", r"directory"]))

    def mk_empty(d):
        for n in ("empty.snn.h5", "empty.pt", "empty.h5", "empty-images-idx3-ubyte", "empty-labels-idx1-ubyte"):
            open(os.path.join(d, n), "wb").close()

    cs.append(Case("info of an empty file", ["info", "empty.snn.h5"], setup=mk_empty, msg=[r"empty\.snn\.h5", r"empty|not an HDF5"]))
    cs.append(Case("convert an empty .pt", convert_args("out.snn.h5", model="empty.pt"), setup=mk_empty,
                   msg=[r"empty\.pt", r"empty|not a TorchScript|zip|archive"], needs={"convert"}, outputs=["out.snn.h5"]))
    cs.append(Case("sweep --data an empty .h5", sweep_args(data="empty.h5"), setup=mk_empty,
                   msg=[r"empty\.h5", r"empty|not an HDF5"]))
    cs.append(Case("sweep --data an empty IDX file", sweep_args(data="empty-images-idx3-ubyte"), setup=mk_empty,
                   msg=[r"empty-images-idx3-ubyte", r"empty|truncat|header|too short"]))

    def mk_text(d):
        for n in ("text.pt", "text.snn.h5", "text.h5"):
            with open(os.path.join(d, n), "w") as f:
                f.write("this is not a model\n")

    cs.append(Case("convert a text file named .pt", convert_args("out.snn.h5", model="text.pt"), setup=mk_text,
                   msg=[r"text\.pt", r"TorchScript|zip|archive"], needs={"convert"}, outputs=["out.snn.h5"]))
    cs.append(Case("info of a text file named .snn.h5", ["info", "text.snn.h5"], setup=mk_text,
                   msg=[r"text\.snn\.h5", r"not an HDF5"]))
    cs.append(Case("sweep --data a text file named .h5", sweep_args(data="text.h5"), setup=mk_text,
                   msg=[r"text\.h5", r"not an HDF5"]))
    cs.append(Case("info of an HDF5 dataset file (not a model)", ["info", "d.h5"], needs={"h5py"},
                   msg=[r"d\.h5", r"not an snnc|format"]))
    cs.append(Case("sweep --data a .snn.h5 model (not a dataset)", sweep_args(data="m.snn.h5"),
                   msg=[r"m\.snn\.h5", r"images"]))

    def mk_idx_short(d):
        # The header declares 1000 images, the file holds 10 (the labels file is complete).
        write_idx(os.path.join(d, "short-images-idx3-ubyte"), 10, declared_n=1000, labels=[i % 10 for i in range(1000)])

    cs.append(Case("sweep --data an IDX file shorter than its header", sweep_args(data="short-images-idx3-ubyte"),
                   setup=mk_idx_short, msg=[r"short-images-idx3-ubyte", r"truncat|too short|ends"]))

    def mk_idx_nolabels(d):
        write_idx(os.path.join(d, "nolab-images-idx3-ubyte"), 10)
        os.remove(os.path.join(d, "nolab-labels-idx1-ubyte"))

    cs.append(Case("sweep --data IDX images without the labels file", sweep_args(data="nolab-images-idx3-ubyte"),
                   setup=mk_idx_nolabels, msg=[r"nolab-labels-idx1-ubyte|label"]))

    def mk_idx_fewlabels(d):
        write_idx(os.path.join(d, "few-images-idx3-ubyte"), 20, labels=[1] * 5)

    cs.append(Case("sweep --data IDX with fewer labels than images", sweep_args(data="few-images-idx3-ubyte"),
                   setup=mk_idx_fewlabels, msg=[r"few-", r"label", r"\b5\b|\b20\b"]))

    def mk_gz_cut(d):
        import gzip
        with open(os.path.join(d, "d-images-idx3-ubyte"), "rb") as f:
            data = gzip.compress(f.read(), mtime=0)
        with open(os.path.join(d, "gz-images-idx3-ubyte.gz"), "wb") as f:
            f.write(data[: len(data) // 2])
        shutil.copy2(os.path.join(d, "d-labels-idx1-ubyte"), os.path.join(d, "gz-labels-idx1-ubyte"))

    cs.append(Case("sweep --data a truncated .gz IDX file", sweep_args(data="gz-images-idx3-ubyte.gz"),
                   setup=mk_gz_cut, msg=[r"gz-images-idx3-ubyte\.gz", r"truncat|corrupt|gzip|unexpected end"]))

    def mk_bad_magic(d):
        write_idx(os.path.join(d, "magic-images-idx3-ubyte"), 10)
        with open(os.path.join(d, "magic-images-idx3-ubyte"), "r+b") as f:
            f.write(struct.pack(">I", 0x801))  # a labels file's magic number

    cs.append(Case("sweep --data an IDX file with the wrong magic number", sweep_args(data="magic-images-idx3-ubyte"),
                   setup=mk_bad_magic, msg=[r"magic-images-idx3-ubyte", r"magic|not an IDX|images"]))

    def del_attr(attr, where):
        state = {}

        def setup(d):
            with h5py.File(os.path.join(d, "m.snn.h5"), "r+") as f:
                if where == "layer":
                    g = sorted(f["layers"].keys())[1]
                    state["name"] = f["layers"][g].attrs.get("name", b"")
                    state["name"] = state["name"].decode() if isinstance(state["name"], bytes) else str(state["name"])
                    state["g"] = g
                    del f["layers"][g].attrs[attr]
                else:
                    del f.attrs[attr]

        def check(d, res):
            if where != "layer":
                return []
            rx = layer_named(state["name"], state["g"])
            return [] if re.search(rx, res.stderr) else [f"does not name the layer ('{state['name']}', #{state['g']})"]
        return setup, check

    for attr, where in (("type", "layer"), ("inputs", "layer"), ("input_shape", "root"), ("layer_count", "root")):
        setup, check = del_attr(attr, where)
        cs.append(Case(f"info of a .snn.h5 without the {where} attribute '{attr}'", ["info", "m.snn.h5"], setup=setup,
                       check=check, needs={"h5py"}, msg=[r"m\.snn\.h5", re.escape(attr)],
                       expected_text=f"exit 1, names m.snn.h5, '{attr}'" + (" and the layer" if where == "layer" else "")))
    for c in cs:
        c.group = "corrupt inputs"
    return cs


# ---- silently wrong results

def cases_wrong_results():
    cs = []
    bad_values = (("NaN", float("nan")), ("+Inf", float("inf")), ("-Inf", float("-inf")))

    def poke(kind, names, value, strip_digests=False):
        state = {}

        def setup(d):
            g, name, ds = find_layer_dataset(kind, names)
            state.update(g=g, name=name)
            poke_dataset(os.path.join(d, "m.snn.h5"), g, ds, value=value)
            if strip_digests:  # what a user editing the file on purpose is told to do
                with h5py.File(os.path.join(d, "m.snn.h5"), "r+") as f:
                    for obj in [f] + [f["layers"][k] for k in f["layers"]]:
                        for a in [a for a in obj.attrs if a.lower() in ("crc32", "digest", "checksum", "sha256")]:
                            del obj.attrs[a]

        def check(d, res):
            rx = layer_named(state["name"], state["g"])
            return [] if re.search(rx, res.stderr) else [f"does not name the layer ('{state['name']}')"]
        return setup, check

    RX = r"non-finite|NaN|Inf|checksum|corrupt"
    for what, kind, names in (("a conv weight", "conv", ["weight", "kernel"]),
                              ("a threshold", "neuron", ["threshold", "theta"]),
                              ("a bias", "conv", ["bias"]),
                              ("a linear weight", "linear", ["weight"])):
        for vname, v in bad_values[: 2 if what != "a conv weight" else 3]:
            setup, check = poke(kind, names, v)
            cs.append(Case(f"sweep: {vname} in {what} of m.snn.h5", sweep_args(), setup=setup, check=check,
                           needs={"h5py"}, msg=[RX, r"m\.snn\.h5"],
                           expected_text="exit 1, 'non-finite'/'NaN' (or 'checksum'/'corrupt'), names m.snn.h5 "
                                         "and the layer"))
    # The same with the stored digests deleted (as the checksum message suggests for deliberate edits):
    # now only the non-finite check can catch it.
    for what, kind, names, vname, v in (("a conv weight", "conv", ["weight", "kernel"], "NaN", float("nan")),
                                        ("a threshold", "neuron", ["threshold", "theta"], "NaN", float("nan")),
                                        ("a threshold", "neuron", ["threshold", "theta"], "+Inf", float("inf")),
                                        ("a bias", "conv", ["bias"], "-Inf", float("-inf")),
                                        ("a linear weight", "linear", ["weight"], "NaN", float("nan"))):
        setup, check = poke(kind, names, v, strip_digests=True)
        cs.append(Case(f"sweep: {vname} in {what} of m.snn.h5, digests deleted", sweep_args(), setup=setup,
                       check=check, needs={"h5py"}, msg=[r"non-finite|NaN|Inf", r"m\.snn\.h5"],
                       expected_text="exit 1, 'non-finite'/'NaN'/'Inf', names m.snn.h5 and the layer"))
    setup, check = poke("conv", ["weight", "kernel"], float("nan"), strip_digests=True)
    cs.append(Case("info: NaN in a conv weight, digests deleted", ["info", "m.snn.h5"], setup=setup, check=check,
                   needs={"h5py"}, msg=[r"non-finite|NaN", r"m\.snn\.h5"]))
    setup, check = poke("conv", ["weight", "kernel"], float("nan"))
    cs.append(Case("eval --ann: NaN in a conv weight", ["eval", "m.snn.h5", "--data", "d-images-idx3-ubyte", "--ann",
                                                        "--quiet"], setup=setup, check=check, needs={"h5py"},
                   msg=[RX, r"m\.snn\.h5"]))

    def mk_h5(images_fn=None, labels_fn=None, name="bad.h5", n=32):
        def setup(d):
            imgs = idx_images_as_float(os.path.join(d, "d-images-idx3-ubyte"), n)
            labels = np.arange(n, dtype=np.int64) % 10
            if images_fn:
                imgs = images_fn(imgs)
            if labels_fn:
                labels = labels_fn(labels)
            write_h5(os.path.join(d, name), imgs, labels)
        return setup

    def with_pixel(v, i):
        def f(imgs):
            imgs[i, 0, 14, 14] = v
            return imgs
        return f

    cs.append(Case("sweep --data float32 HDF5 with a NaN pixel in image 5", sweep_args(data="bad.h5"),
                   setup=mk_h5(with_pixel(float("nan"), 5)), needs={"h5py"},
                   msg=[r"bad\.h5", r"NaN|non-finite", r"image\D{0,20}\b5\b"]))
    cs.append(Case("sweep --data float32 HDF5 with an Inf pixel in image 7", sweep_args(data="bad.h5"),
                   setup=mk_h5(with_pixel(float("inf"), 7)), needs={"h5py"},
                   msg=[r"bad\.h5", r"Inf|non-finite", r"image\D{0,20}\b7\b"]))
    cs.append(Case("calibrate --data float32 HDF5 with a NaN pixel in image 5",
                   ["calibrate", "m.snn.h5", "-o", "out.snn.h5", "--data", "bad.h5", "--T", "4", "--batches", "1",
                    "--batch-size", "16", "--quiet"], setup=mk_h5(with_pixel(float("nan"), 5)), needs={"h5py"},
                   msg=[r"bad\.h5", r"NaN|non-finite", r"image\D{0,20}\b5\b"], outputs=["out.snn.h5"]))

    def with_label(v, i=3):
        def f(labels):
            labels[i] = v
            return labels
        return f

    for v in (2 ** 40, -1, 2 ** 31 - 1, 2 ** 63 - 1):
        cs.append(Case(f"sweep --data HDF5 with label {v} (int64)", sweep_args(data="bad.h5"),
                       setup=mk_h5(labels_fn=with_label(v)), needs={"h5py"}, timeout=20,
                       msg=[r"bad\.h5", r"label"], expected_text="exit 1, names bad.h5 and the label"))
    cs.append(Case("sweep --data HDF5 with float labels", sweep_args(data="bad.h5"),
                   setup=mk_h5(labels_fn=lambda l: l.astype(np.float32) + 0.5), needs={"h5py"},
                   msg=[r"bad\.h5", r"label"]))

    def mk_idx_labels(labels, name="lab"):
        def setup(d):
            write_idx(os.path.join(d, f"{name}-images-idx3-ubyte"), len(labels), labels=labels)
        return setup

    cs.append(Case("sweep --data with labels 0..11 (model reads out 10 classes)", sweep_args(data="lab-images-idx3-ubyte"),
                   setup=mk_idx_labels([i % 12 for i in range(48)]),
                   msg=[r"lab-images-idx3-ubyte|label", r"\b1[01]\b|\b12\b", r"\b10\b"],
                   expected_text="exit 1: labels beyond the readout, naming the label/12 classes and the 10 outputs"))
    cs.append(Case("sweep --data with 5 classes on a 10-class model", sweep_args(data="lab-images-idx3-ubyte"),
                   setup=mk_idx_labels([i % 5 for i in range(40)]), expect=0,
                   msg=[r"warn", r"\b5\b", r"\b10\b"],
                   expected_text="exit 0 with a warning on stderr naming 10 outputs and 5 classes"))

    def mk_huge_dims(shape, dtype="f4", write_labels=True):
        """Images declared huge (chunked, nothing written). Labels written when that is cheap, so that
        the images' size is what snnc has to refuse."""
        def setup(d):
            with h5py.File(os.path.join(d, "huge.h5"), "w") as f:
                f.create_dataset("images", shape=shape, dtype=dtype, chunks=(1,) + tuple(min(s, 64) for s in shape[1:]))
                if write_labels:
                    f.create_dataset("labels", data=np.arange(shape[0], dtype=np.int64) % 10)
                else:
                    f.create_dataset("labels", shape=(shape[0],), dtype="i8", chunks=(min(shape[0], 1024),))
        return setup

    def names_huge_if_refused(d, res):
        if res.rc == 1 and not re.search(r"huge\.h5", res.stderr):
            return ["refused without naming huge.h5"]
        if res.rc == 1 and re.search(r"out of memory", res.stderr):
            return ["ran out of memory instead of refusing up front"]
        return []

    big_shape = (10 ** 6, 1, 10 ** 5, 10 ** 5)
    for lim in ((), ("--limit", "50")):
        args = ["sweep", "m.snn.h5", "--data", "huge.h5", "--T", "4", "--quiet"] + list(lim)
        cs.append(Case("sweep --data HDF5 declared 1e6x1x1e5x1e5" + (" --limit 50" if lim else ""), args,
                       setup=mk_huge_dims(big_shape), needs={"h5py"}, timeout=20,
                       msg=[r"huge\.h5", r"memory|GiB|TiB|PiB|EiB|too large|100000"],
                       expected_text="exit 1 with a memory/size estimate (or the shape mismatch), not bad_alloc"))
    args = ["sweep", "m.snn.h5", "--data", "huge.h5", "--T", "4", "--quiet"]
    # 1e9 labels cannot be written here (8 GB): nothing is, so the file is also "declared, never written".
    cs.append(Case("sweep --data HDF5 declared 1e9 images of 1x28x28 (uint8)", args,
                   setup=mk_huge_dims((10 ** 9, 1, 28, 28), "u1", write_labels=False), needs={"h5py"}, timeout=20,
                   msg=[r"huge\.h5", r"memory|GiB|GB|too large|--limit"],
                   expected_text="exit 1 naming huge.h5 with a size estimate, fast, not bad_alloc/out of memory"))
    cs.append(Case("sweep --data HDF5 declared 1e9 images of 1x28x28, --limit 50", args + ["--limit", "50"],
                   setup=mk_huge_dims((10 ** 9, 1, 28, 28), "u1", write_labels=False), needs={"h5py"}, timeout=20,
                   expect=(0, 1), check=names_huge_if_refused,
                   expected_text="exit 0 (50 images of fill value) or exit 1 naming huge.h5 (never written), "
                                 "fast; not out of memory"))

    def mk_huge_shape(shape):
        def setup(d):
            with h5py.File(os.path.join(d, "m.snn.h5"), "r+") as f:
                f.attrs["input_shape"] = np.array(shape, dtype=np.int64)
        return setup

    def no_zero_neurons(d, res):
        probs = []
        if res.rc == 0:
            if re.search(r"(?<![\d.])0 neurons|neurons\W+0\b|-\d+ neurons", res.stdout):
                probs.append("prints 0 (or negative) neurons")
        return probs

    for shape in ([1, 2 ** 31, 2 ** 31], [1, 3037000500, 3037000500], [2 ** 62, 2 ** 62, 4]):
        cs.append(Case(f"info of a model with input_shape {shape}", ["info", "m.snn.h5"], setup=mk_huge_shape(shape),
                       needs={"h5py"}, expect=(0, 1), check=no_zero_neurons,
                       msg=[r"^$|input_shape|overflow|too large|m\.snn\.h5"],
                       expected_text="exit 1 naming input_shape/overflow, or exit 0 with correct counts "
                                     "(never '0 neurons')"))
    for c in cs:
        c.group = "wrong results"
    return cs


# ---- limits and options

def cases_options():
    cs = []
    fifo_data = "fifo-images-idx3-ubyte"

    def mk_fifo(d):
        os.mkfifo(os.path.join(d, fifo_data))
        os.mkfifo(os.path.join(d, "fifo-labels-idx1-ubyte"))

    def opt(name, args, option, timeout=15, setup=None, extra_msg=(), outputs=()):
        cs.append(Case(name, args, msg=[re.escape(option)] + list(extra_msg), short=True, timeout=timeout,
                       setup=setup, outputs=outputs,
                       expected_text=f"exit 1, names {option}, short message, no 309-digit number"))

    opt("sweep --threads 100000", sweep_args(["--threads", "100000"]), "--threads")
    opt("sweep --threads -1", sweep_args(["--threads", "-1"]), "--threads")
    for t in ("0", "-1", "100000000", "abc", "99999999999999999999"):
        opt(f"sweep --T {t}", sweep_args(["--T", t]), "--T", timeout=10)
    opt("calibrate --T 100000000", calib_args("out.snn.h5", ["--T", "100000000"]), "--T", timeout=10,
        outputs=["out.snn.h5"])
    opt("calibrate --T 0", calib_args("out.snn.h5", ["--T", "0"]), "--T", outputs=["out.snn.h5"])
    opt("sweep --batch-size 0", sweep_args(["--batch-size", "0"]), "--batch-size")
    opt("sweep --batch-size -5", sweep_args(["--batch-size", "-5"]), "--batch-size")
    opt("sweep --calib-batch-size 0 (data is a FIFO: must fail before reading it)",
        ["sweep", "m.snn.h5", "--data", fifo_data, "--T", "4", "--compare", "none,ftbc", "--calib-data", fifo_data,
         "--calib-batch-size", "0"], "--calib-batch-size", timeout=8, setup=mk_fifo)
    opt("sweep --limit -1", sweep_args(["--limit", "-1"]), "--limit")
    opt("sweep --limit 1e400", sweep_args(["--limit", "1e400"]), "--limit")
    for a in ("-1", "nan", "inf", "1e999"):
        opt(f"calibrate --alpha {a}", calib_args("out.snn.h5", ["--alpha", a]), "--alpha", outputs=["out.snn.h5"])
    opt("sweep --compare none,ftbc --alpha nan", sweep_args(["--compare", "none,ftbc", "--alpha", "nan"]), "--alpha")
    opt("calibrate --iters 0", calib_args("out.snn.h5", ["--iters", "0"]), "--iters", outputs=["out.snn.h5"])
    opt("calibrate --batches 0", calib_args("out.snn.h5", ["--batches", "0"]), "--batches", outputs=["out.snn.h5"])
    opt("calibrate --batches -3", calib_args("out.snn.h5", ["--batches", "-3"]), "--batches", outputs=["out.snn.h5"])
    opt("calibrate --method bogus", calib_args("out.snn.h5", ["--method", "bogus"]), "bogus", outputs=["out.snn.h5"])
    opt("sweep --compare none,bogus", sweep_args(["--compare", "none,bogus"]), "bogus")
    opt("sweep --encoding bogus", sweep_args(["--encoding", "bogus"]), "bogus")
    opt("sweep --device bogus", sweep_args(["--device", "bogus"]), "--device")
    opt("sweep --data fashion-mnist:bogus", sweep_args(data="fashion-mnist:bogus"), "bogus")
    for o, v in (("--percentile", "150"), ("--percentile", "-1"), ("--percentile", "nan"),
                 ("--check-tolerance", "-1"), ("--check-tolerance", "nan"), ("--check-images", "0"),
                 ("--check-images", "-1"), ("--beta", "0"), ("--beta", "nan"), ("--v-init", "nan")):
        extra = ["--norm", "percentile"] if o == "--percentile" else ["--neuron", "lif"] if o == "--beta" else []
        cs.append(Case(f"convert {o} {v}", convert_args("out.snn.h5", extra=extra + [o, v]), msg=[re.escape(o)],
                       short=True, needs={"convert"}, outputs=["out.snn.h5"], timeout=20,
                       expected_text=f"exit 1, names {o}, short message"))
    for o, v in (("--mean", "nan"), ("--std", "0"), ("--std", "-1"), ("--input-shape", "0,28,28"),
                 ("--input-shape", "1,99999999999,99999999999"), ("--input-shape", "1,28")):
        cs.append(Case(f"convert {o} {v}", convert_args("out.snn.h5", extra=[o, v]) if o not in ("--mean", "--std")
                       else ["convert", "m.pt", "-o", "out.snn.h5", "--data", "d-images-idx3-ubyte",
                             "--mean", "nan" if o == "--mean" else "0.286", "--std", v if o == "--std" else "0.353"],
                       msg=[re.escape(o)], short=True, needs={"convert"}, outputs=["out.snn.h5"], timeout=20,
                       expected_text=f"exit 1, names {o}, short message"))
    cs.append(Case("snnc frobnicate", ["frobnicate"], msg=[r"unknown command", r"frobnicate"], short=True))
    cs.append(Case("snnc (no command)", [], msg=[r"command|convert|sweep"], short=False,
                   expected_text="exit 1, says a command is needed (help text allowed)"))
    cs.append(Case("sweep --frobnicate (unknown option)", sweep_args(["--frobnicate"]), msg=[r"--frobnicate"], short=True))
    cs.append(Case("sweep without --data", ["sweep", "m.snn.h5", "--T", "4"], msg=[r"--data"], short=True))
    cs.append(Case("calibrate without -o", ["calibrate", "m.snn.h5", "--data", "d-images-idx3-ubyte", "--T", "4"],
                   msg=[r"-o|--out"], short=True))
    cs.append(Case("calibrate without --T", ["calibrate", "m.snn.h5", "-o", "out.snn.h5", "--data",
                                             "d-images-idx3-ubyte"], msg=[r"--T"], short=True, outputs=["out.snn.h5"]))
    cs.append(Case("info of a missing file", ["info", "nope.snn.h5"], msg=[r"nope\.snn\.h5", r"not found|No such file"],
                   short=True))
    cs.append(Case("sweep --T given twice", sweep_args(["--T", "8"]), expect=(0, 1),
                   expected_text="exit 0 (last wins) or 1 naming --T"))
    for c in cs:
        c.group = "limits/options"
    return cs


def sanity_cases():
    cs = [Case("sanity: info m.snn.h5", ["info", "m.snn.h5"], expect=0),
          Case("sanity: sweep", sweep_args(), expect=0),
          Case("sanity: calibrate -o new file", calib_args("out.snn.h5"), expect=0, outputs=["out.snn.h5"]),
          Case("sanity: sweep -o s.h5", sweep_args(["-o", "s.h5"]), expect=0, outputs=["s.h5"]),
          Case("sanity: calibrate -o over an existing other model",
               calib_args("old.snn.h5"), expect=0, outputs=["old.snn.h5"],
               setup=lambda d: shutil.copy2(A("m.snn.h5"), os.path.join(d, "old.snn.h5")))]
    for c in cs:
        c.group = "sanity"
    return cs


def surface_cases():
    """Cases kept in files of their own, one per surface (tests/reliability/cases_*.py): each module has
    cases(rc), rc being this module, whose Case, A, copy_inputs, ... it builds on."""
    import importlib.util
    found = []
    for name in sorted(os.listdir(HERE)):
        if name.startswith("cases_") and name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(name[:-3], os.path.join(HERE, name))
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            found += mod.cases(sys.modules[__name__])
    return found


def all_cases():
    return (sanity_cases() + cases_data_loss() + cases_output_paths() + cases_full_disk() + cases_signals()
            + cases_concurrency() + cases_corrupt() + cases_wrong_results() + cases_options() + surface_cases())


# ------------------------------------------------------------------------------------------------ set-up

def prepare_assets(needed):
    """The shared inputs: tiny IDX data, the .pt fixture, the converted model, baselines for signals."""
    a = ENV.assets
    os.makedirs(a, exist_ok=True)
    write_idx(os.path.join(a, "d-images-idx3-ubyte"), 64)
    if "big" in needed:
        write_idx(os.path.join(a, "big-images-idx3-ubyte"), 20000, seed=1)
    if HAVE_H5PY:
        imgs = idx_images_as_float(os.path.join(a, "d-images-idx3-ubyte"), 64)
        write_h5(os.path.join(a, "d.h5"), imgs, np.arange(64, dtype=np.int64) % 10)
    src = os.path.join(FIXTURES, "fmnist_tiny.pt")
    if os.path.exists(src):
        shutil.copy2(src, os.path.join(a, "m.pt"))
    # The model: converted by snnc itself (so it is whatever the current format is).
    msgs = []
    if os.path.exists(os.path.join(a, "m.pt")):
        p = run_snnc(convert_args("m.snn.h5"), a, timeout=300)
        ENV.can_convert = p.returncode == 0
        if not ENV.can_convert:
            msgs.append("snnc convert failed (exit %d): %s" % (p.returncode, first_line(p.stderr)[:200]))
    if not os.path.exists(os.path.join(a, "m.snn.h5")) and ENV.api_example:
        # Without the importer: the C++ API's hand-built model (needs Fashion-MNIST; has no conv layer).
        p = subprocess.run([ENV.api_example, os.path.join(a, "m.snn.h5"), "4"], cwd=a, capture_output=True,
                           text=True, timeout=300)
        msgs.append("model from api_example (exit %d)" % p.returncode)
    if not os.path.exists(os.path.join(a, "m.snn.h5")):
        ENV.model_ok = False
    else:
        ENV.model_ok = True
    if ENV.model_ok and HAVE_H5PY:
        ENV.layers = model_layers(os.path.join(a, "m.snn.h5"))
    # tmpfs mounts (root, and a kernel/container that allows them)
    probe = os.path.join(ENV.work, "mount-probe")
    os.makedirs(probe, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], capture_output=True, text=True)
    if p.returncode == 0:
        ENV.can_mount = True
        subprocess.run(["umount", probe], capture_output=True)
    shutil.rmtree(probe, ignore_errors=True)
    return msgs


def measure_baselines(kinds):
    """How long the interrupted commands run, so that signals land at fractions of it."""
    for kind in kinds:
        if kind == "convert" and not ENV.can_convert:
            continue
        d = tempfile.mkdtemp(prefix="baseline-", dir=ENV.work)
        copy_inputs(d)
        args = {"calibrate": SIG_CALIB, "sweep": SIG_SWEEP, "convert": SIG_CONVERT}[kind]("target")
        t0 = time.monotonic()
        p = run_snnc(args, d, timeout=300)
        if p.returncode == 0:
            ENV.durations[kind] = time.monotonic() - t0
        log(f"baseline {kind}: exit {p.returncode}, {time.monotonic() - t0:.2f} s")
        shutil.rmtree(d, ignore_errors=True)


def missing_needs(case):
    if not ENV.model_ok:
        return "no model: snnc could not make m.snn.h5 (see the set-up notes)"
    if "h5py" in case.needs and not HAVE_H5PY:
        return "h5py/numpy not importable"
    if "convert" in case.needs and not ENV.can_convert:
        return "snnc convert unavailable (built without LibTorch?) or failed"
    if "torch" in case.needs and not HAVE_TORCH:
        return "torch not importable"
    return None


def display_cmd(case, d):
    if case.cmd and case.cmd[0] == "bash":
        s = case.cmd[1].replace('"$SNNC"', "snnc")
    else:
        s = "snnc " + " ".join(a if a and " " not in a else repr(a) for a in case.cmd)
    s = s.replace("{D}", "$D").replace("{A}", "$A").replace(ENV.assets, "$A").replace(d, "$D")
    s = re.sub(r"L{40,}", lambda m: f"L×{len(m.group(0))}", s)
    return s


def run_case(case, index):
    d = os.path.join(ENV.work, "case-%03d" % index)
    os.makedirs(d)
    why = missing_needs(case)
    if why:
        return "SKIP", Result(notes=[why]), [], d
    copy_inputs(d)
    try:
        if case.setup:
            case.setup(d)
    except Skip as e:
        if case.teardown:
            case.teardown(d)
        return "SKIP", Result(notes=[str(e)]), [], d
    before = snapshot(d)
    assets_before = snapshot(ENV.assets)
    try:
        res = (case.runner or default_runner)(d, case)
    except Skip as e:
        if case.teardown:
            case.teardown(d)
        return "SKIP", Result(notes=[str(e)]), [], d
    after = snapshot(d)
    probs = generic_problems(case, res, before, after, d)
    if "*tmp" in case.changes_ok:  # SIGKILL: leftovers are reported by the case's check, not failed here
        probs = [p for p in probs if "temporary file" not in p]
    if snapshot(ENV.assets) != assets_before:
        probs.append("a shared input under $A changed")
    if case.check and not res.timed_out:
        probs += case.check(d, res)
    if case.name.startswith("sweep -o a character device"):
        st = os.lstat(os.path.join(d, "null"))
        if not stat.S_ISCHR(st.st_mode):
            probs.append("the device node was replaced by a regular file")
    if case.teardown:
        case.teardown(d)
    return ("FAIL" if probs else "PASS"), res, probs, d


def md(s):
    return s.replace("|", "\\|").replace("\n", " ").replace("`", "'")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snnc", required=True, help="the snnc binary to test")
    ap.add_argument("--api-example", help="api_example binary: makes the model when snnc convert cannot")
    ap.add_argument("--filter", default="", help="run only cases whose name or group matches this regex")
    ap.add_argument("--table", help="also write the markdown table to this file")
    ap.add_argument("--work", help="work directory (default: a fresh temporary one, removed afterwards)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="cases run at once (signal and concurrency cases "
                    "always run alone; default 2)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    ENV.snnc = os.path.abspath(args.snnc)
    ENV.sanitized = is_sanitized(ENV.snnc)
    ENV.api_example = os.path.abspath(args.api_example) if args.api_example else ""
    ENV.verbose = args.verbose
    cases = all_cases()
    if args.filter:
        rx = re.compile(args.filter, re.I)
        cases = [c for c in cases if rx.search(c.name) or rx.search(c.group)]
    if args.list:
        for c in cases:
            print(f"{c.group:15s} {c.name}")
        return 0
    if not os.access(ENV.snnc, os.X_OK):
        print(f"run_cases.py: {ENV.snnc} is not an executable", file=sys.stderr)
        return 1
    if args.work:
        ENV.work = os.path.abspath(args.work)
        shutil.rmtree(ENV.work, ignore_errors=True)
        os.makedirs(ENV.work)
    else:
        ENV.work = tempfile.mkdtemp(prefix="snnc-reliability-")
    ENV.assets = os.path.join(ENV.work, "assets")
    t_start = time.monotonic()
    needed = {"big"} if any(c.group == "output paths" for c in cases) else set()
    notes = prepare_assets(needed)
    kinds = sorted({k for c in cases if c.group == "signals" for k in ("calibrate", "convert", "sweep")
                    if f"during {k}" in c.name})
    if ENV.model_ok:
        measure_baselines(kinds)
    rows = []
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    # Independent cases run --jobs at a time; the timing-sensitive ones (signals at fractions of a
    # baseline run, concurrent writers) run alone afterwards.
    serial = [i for i, c in enumerate(cases) if c.group in ("signals", "concurrency")]
    parallel = [i for i in range(len(cases)) if i not in serial]
    outcome = {}

    def one(i):
        outcome[i] = run_case(cases[i], i)
        status, res, probs, _ = outcome[i]
        log(f"{status} {cases[i].name}: exit {res.rc} {first_line(res.stderr)[:100]} {'; '.join(probs)}")

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            list(pool.map(one, parallel))
        for i in serial:
            one(i)
        for i, case in enumerate(cases):
            status, res, probs, d = outcome[i]
            counts[status] += 1
            if status == "SKIP":
                got = "skipped: " + "; ".join(res.notes)
            else:
                got = ("hang (killed after %d s)" % case.timeout if res.timed_out else
                       f"exit {res.rc}" if res.rc is None or res.rc >= 0 else f"killed by {signal_name(res.rc)}")
                line = re.sub(r"L{40,}", lambda m: f"L×{len(m.group(0))}", first_line(res.stderr))
                if line:
                    got += ": " + (line if len(line) <= 160 else line[:157] + "...")
                if res.notes:
                    got += " [" + "; ".join(res.notes) + "]"
                got += f" ({res.seconds:.1f} s)"
            result = status + (": " + "; ".join(probs) if probs else "")
            got = re.sub(r"L{40,}", lambda m: f"L×{len(m.group(0))}", got)
            rows.append((case.name, display_cmd(case, d), expected_summary(case), got, result))
            if status != "FAIL" and not args.keep:
                shutil.rmtree(d, ignore_errors=True)
    finally:
        for m in ENV.mounts[::-1]:
            subprocess.run(["umount", "-l", m], capture_output=True)
    elapsed = time.monotonic() - t_start
    out = ["| case | command | expected | got (exit, first line of stderr) | result |", "|---|---|---|---|---|"]
    out += ["| " + " | ".join(md(c) for c in r) + " |" for r in rows]
    summary = (f"\n**{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped** of {len(rows)} "
               f"cases in {elapsed:.0f} s; snnc: `{ENV.snnc}`; $D: the case's directory, $A: shared inputs "
               f"({'kept in ' + ENV.work if args.keep or counts['FAIL'] else 'removed'}).")
    setup_notes = notes + [f"root: {ENV.is_root}, tmpfs mounts: {'yes' if ENV.can_mount else 'no'}, "
                           f"h5py: {'yes' if HAVE_H5PY else 'no'}, convert: {'yes' if ENV.can_convert else 'no'}, "
                           "baselines: " + ", ".join(f"{k} {v:.2f} s" for k, v in ENV.durations.items())]
    text = "\n".join(out) + "\n" + summary + "\n\nSet-up: " + "; ".join(setup_notes) + "\n"
    print(text)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    if not args.keep and not counts["FAIL"]:
        shutil.rmtree(ENV.work, ignore_errors=True)
    if counts["FAIL"]:
        return 1
    if counts["PASS"] == 0:
        return EXIT_SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
