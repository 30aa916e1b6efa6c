"""Sweep checkpoints (issue 36): a resume trusts nothing it has not checked.

Each case starts from a real checkpoint, left by a `sweep --checkpoint` killed (SIGKILL) midway, made once
and copied into the case's directory, then damages it as a disk, a careless user or a crafted file would:
a flipped bit, zeroed / NaN / 1e6 sums, next_block set to the end, an unknown format version (some edits
also recompute the digest, to reach the value checks behind it). Or it changes what the job depends on:
--T, --device, the contents of --data or of --calib-data between the kill and the resume. Each must exit
1 with one message naming the checkpoint and the cause, and leave the checkpoint as it was (run_cases.py's
generic checks); the untouched checkpoint resumes to the numbers of an uninterrupted run.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

GROUP = "checkpoint"
IMAGES = 600  # batches of one image: ~1 ms per checkpoint save, so the kill lands midway
DATA = "k-images-idx3-ubyte"
CALIB = "c-images-idx3-ubyte"
CK = "ck.h5"
_LOCK = threading.Lock()
_MADE = {}


def _ckfile():
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import sweep_checkpoint_file  # noqa: PLC0415 - needs h5py (cases declare needs={"h5py"})
    return sweep_checkpoint_file


def _sweep(compare=False, extra=(), T=4):
    args = ["sweep", "m.snn.h5", "--data", DATA, "--T", str(T), "--batch-size", "1", "--threads", "1", "--quiet"]
    if compare:
        args += ["--compare", "none,ftbc", "--calib-data", CALIB, "--calib-batch-size", "16", "--batches", "1",
                 "--iters", "1"]
    return args + list(extra)


def _killed_checkpoint(rc, compare):
    """A directory holding the inputs and the checkpoint of a sweep killed after two batches (made once;
    on a machine fast enough to finish first, again with more images)."""
    with _LOCK:
        if compare not in _MADE:
            d = os.path.join(rc.ENV.work, f"checkpoint-source-{'compare' if compare else 'plain'}")
            for images in (IMAGES, 8 * IMAGES):
                if _kill_midway(rc, d, compare, images):
                    _MADE[compare] = d
                    break
            else:
                raise rc.Skip("every sweep to be killed midway ended first")
        return _MADE[compare]


def _kill_midway(rc, d, compare, images):
    h5py = _ckfile().h5py
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    rc.copy_inputs(d)
    rc.write_idx(os.path.join(d, DATA), images, seed=3)
    rc.write_idx(os.path.join(d, CALIB), 64, seed=4)
    p = subprocess.Popen(rc.snnc_cmd(_sweep(compare, ["--checkpoint", CK])), cwd=d, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        try:
            with h5py.File(os.path.join(d, CK), "r") as f:
                if any(g.attrs["next_block"] >= 2 for g in f["parts"].values()):
                    break
        except (OSError, KeyError):
            pass
        time.sleep(0.002)
    if p.poll() is not None:
        return False
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    for name in os.listdir(d):  # what a kill may leave beside the checkpoint
        if ".tmp-" in name:
            os.remove(os.path.join(d, name))
    return True


def _with_checkpoint(rc, compare=False, edit=None):
    """setup(d): the killed sweep's data and checkpoint in d, then edit(d) (damage or a change)."""
    def setup(d):
        src = _killed_checkpoint(rc, compare)
        for name in (DATA, rc.idx_labels_path(DATA), CALIB, rc.idx_labels_path(CALIB), CK):
            shutil.copy2(os.path.join(src, name), os.path.join(d, name))
        if edit:
            edit(d)
    return setup


def _set_part(attr=None, value=None, sums=None, redigest=False):
    def edit(d):
        ck = _ckfile()
        path = os.path.join(d, CK)
        with ck.h5py.File(path, "r+") as f:
            g = next(iter(f["parts"].values()))
            if attr:
                g.attrs[attr] = value(g) if callable(value) else value
            if sums is not None:
                s = g["sums"][()]
                g["sums"][...] = sums(s)
        if redigest:
            ck.redigest(path)
    return edit


def _flip_bit(d):
    """One bit of the saved sums flipped in the file's bytes, as a disk or a bad copy would."""
    ck = _ckfile()
    path = os.path.join(d, CK)
    with ck.h5py.File(path, "r") as f:
        ds = next(iter(f["parts"].values()))["sums"]
        offset = ds.id.get_offset()
    with open(path, "r+b") as f:
        f.seek(offset + 6)  # the first sum's exponent bits: a plausible, different count
        b = f.read(1)
        f.seek(offset + 6)
        f.write(bytes([b[0] ^ 0x01]))


def _root_attr(name, value):
    def edit(d):
        with _ckfile().h5py.File(os.path.join(d, CK), "r+") as f:
            f.attrs[name] = value
    return edit


def _change_file(name):
    def edit(d):
        with open(os.path.join(d, name), "r+b") as f:
            f.seek(16 + 100)  # a pixel of the first image
            b = f.read(1)
            f.seek(16 + 100)
            f.write(bytes([b[0] ^ 0xff]))
    return edit


def _no_empty_reason(d, res):
    return ["the message gives an empty reason '()'"] if "()" in res.stderr else []


def _resumes_exactly(rc):
    def check(d, res):
        if os.path.exists(os.path.join(d, CK)):
            return ["the checkpoint is still there after a complete run"]
        full = rc.run_snnc(_sweep(extra=["--json"]), d, timeout=60)
        try:
            want, got = json.loads(full.stdout)["accuracy"], json.loads(res.stdout)["accuracy"]
        except (ValueError, KeyError) as e:
            return [f"no JSON accuracy ({e})"]
        return [] if want == got else [f"resumed accuracy {got} != uninterrupted {want}"]
    return check


def cases(rc):
    ck = r"ck\.h5"
    damaged = [ck, r"damaged", r"--checkpoint"]
    resume = _sweep(extra=["--checkpoint", CK])
    made = lambda name, edit=None, compare=False, args=None, **kw: rc.Case(  # noqa: E731
        name, args or (_sweep(True, ["--checkpoint", CK]) if compare else resume),
        setup=_with_checkpoint(rc, compare, edit), needs={"h5py"}, group=GROUP, short=True, **kw)
    nan, end = float("nan"), (lambda g: g.attrs["blocks"])
    return [
        made("resume: a flipped bit in the saved sums", _flip_bit, msg=damaged + [r"digest"]),
        made("resume: the saved sums zeroed", _set_part(sums=lambda s: s * 0), msg=damaged + [r"digest"]),
        made("resume: a saved sum NaN", _set_part(sums=lambda s: s + nan), msg=damaged + [r"sums\[0\]", r"nan"]),
        made("resume: a saved sum NaN, digest recomputed", _set_part(sums=lambda s: s + nan, redigest=True),
             msg=damaged + [r"sums\[0\]", r"nan"]),
        made("resume: the saved sums 1e6", _set_part(sums=lambda s: s * 0 + 1e6), msg=damaged + [r"digest"]),
        made("resume: the saved sums 1e6, digest recomputed", _set_part(sums=lambda s: s * 0 + 1e6, redigest=True),
             msg=damaged + [r"1000000 correct predictions"]),
        made("resume: next_block set to the end", _set_part("next_block", end), msg=damaged + [r"digest"]),
        made("resume: next_block past the end, digest recomputed",
             _set_part("next_block", lambda g: g.attrs["blocks"] + 1, redigest=True),
             msg=damaged + [r"next_block \d+ of \d+ blocks"]),
        made("resume: format_version 3", _root_attr("format_version", 3), msg=[ck, r"format_version 3\b"]),
        made("resume: format_version 3.5", _root_attr("format_version", 3.5), msg=[ck, r"format_version 3\.5"]),
        made("resume: format_version 1 (before digests)", _root_attr("format_version", 1),
             msg=[ck, r"older snnc", r"format_version 1"]),
        made("resume: a valid HDF5 file that is not a checkpoint", lambda d: shutil.copy2(os.path.join(d, "d.h5"),
             os.path.join(d, CK)), msg=[ck, r"not an snnc sweep checkpoint|another kind"], check=_no_empty_reason),
        made("resume: a text file as checkpoint", lambda d: open(os.path.join(d, CK), "w").write("not HDF5\n"),
             msg=[ck, r"cannot be opened as an HDF5 file|not an snnc sweep checkpoint|another kind"],
             check=_no_empty_reason),
        made("resume with another --T: says which option differs", args=_sweep(extra=["--checkpoint", CK], T=8),
             msg=[ck, r"another job: --T was 4, now 8"]),
        made("resume with another --device: says which option differs",
             args=_sweep(extra=["--checkpoint", CK, "--device", "cpu"]), msg=[ck, r"--device was auto, now cpu"]),
        made("resume after --data's contents changed", _change_file(DATA),
             msg=[ck, r"contents of --data 'k-images-idx3-ubyte' changed"]),
        made("resume --compare after --calib-data's contents changed", _change_file(CALIB), compare=True,
             msg=[ck, r"contents of --calib-data 'c-images-idx3-ubyte' changed"]),
        made("resume: the untouched checkpoint ends with the uninterrupted run's numbers",
             args=_sweep(extra=["--checkpoint", CK, "--json"]), expect=0, changes_ok=[CK], check=_resumes_exactly(rc),
             timeout=60),
        rc.Case("sweep --checkpoint '': an error naming --checkpoint", rc.sweep_args(["--checkpoint", ""]),
                msg=[r"--checkpoint", r"empty"], group=GROUP, short=True),
    ]
