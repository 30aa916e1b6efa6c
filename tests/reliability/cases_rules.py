"""No silent no-op, clamp or guess; no file of another kind replaced; messages that point at the cause
(issue 36, items 4-6).

- `levels` at a T smaller than the model's QCFS levels refuses, naming --T, the layer and L;
- seeds out of [0, 2^64 - 1] (or not written as a whole decimal number) are errors naming the option;
- float images in 0..255 for a model normalised for [0, 1] pixels get one warning naming the cause;
- every numeric field of a model file is range-checked on load, the error naming the layer and field;
- an existing -o holding another kind of file (a TorchScript model, a dataset, text) is refused on every
  command unless --overwrite; a file of the same kind is replaced as before;
- an over-long path is "too long", not "not found"; under mpirun an error is printed once.
Every case also gets run_cases.py's generic checks (inputs unchanged, nothing left behind).
"""

import os
import re
import shutil
import subprocess

GROUP = "rules"
SEED_RANGE = r"18446744073709551615"


def _h5py():
    import h5py  # noqa: PLC0415 - only when h5py is there (needs={"h5py"})
    import numpy as np  # noqa: PLC0415
    return h5py, np


# ------------------------------------------------------------------------------------------- helpers

def _qcfs_model(rc, d):
    """q.snn.h5: the QCFS fixture (layers with L = 4 and L = 8, signed spikes), 12x12 images q-images."""
    src = os.path.join(rc.FIXTURES, "qcfs_scripted.pt")
    if not os.path.exists(src):
        raise rc.Skip("no qcfs_scripted.pt fixture")
    shutil.copy2(src, os.path.join(d, "q.pt"))
    p = rc.run_snnc(["convert", "q.pt", "-o", "q.snn.h5", "--input-shape", "1,12,12", "--quiet"], d, timeout=120)
    if p.returncode != 0:
        raise rc.Skip("cannot convert the QCFS fixture: " + rc.first_line(p.stderr)[:120])
    os.remove(os.path.join(d, "q.pt"))
    rc.write_idx(os.path.join(d, "q-images-idx3-ubyte"), 32, h=12, w=12)


def _edit_model(d, edit, name="e.snn.h5"):
    """A copy of m.snn.h5 edited with h5py by edit(file, layers) where layers is [(group, type, name)];
    the digests the edit invalidates are deleted, as the README says an edit on purpose must."""
    h5py, _ = _h5py()
    path = os.path.join(d, name)
    shutil.copy2(os.path.join(d, "m.snn.h5"), path)
    with h5py.File(path, "r+") as f:
        layers = [(g, f["layers"][g].attrs["type"], f["layers"][g].attrs["name"]) for g in sorted(f["layers"])]
        layers = [(g, t.decode() if isinstance(t, bytes) else str(t), n.decode() if isinstance(n, bytes) else str(n))
                  for g, t, n in layers]
        edit(f, layers)
        for g in f["layers"]:
            if "crc32" in f["layers"][g].attrs:
                del f["layers"][g].attrs["crc32"]
        if "crc32" in f.attrs:
            del f.attrs["crc32"]
    return path


_RC = None  # the run_cases module, set by cases()


def _skip(why):
    return _RC.Skip(why)


def _first(layers, kind):
    for g, t, n in layers:
        if t == kind:
            return g, n
    raise _skip(f"m.snn.h5 has no {kind} layer (the model made without LibTorch)")


def _last(layers, kind):
    found = [(g, n) for g, t, n in layers if t == kind]
    if not found:
        raise _skip(f"m.snn.h5 has no {kind} layer (the model made without LibTorch)")
    return found[-1]


def _field_case(rc, title, edit, msg):
    """`snnc info` on m.snn.h5 edited by edit(f, layers) -> layer name: exit 1 naming the layer and msg."""
    named = {}

    def setup(d):
        def apply(f, layers):
            named["layer"] = edit(f, layers)
        _edit_model(d, apply)

    def check(d, res):
        layer = named.get("layer")
        if layer and not re.search(re.escape(layer), res.stderr):
            return [f"stderr does not name layer '{layer}'"]
        return []

    return rc.Case("model field: " + title, ["info", "e.snn.h5"], msg=msg, setup=setup, check=check,
                   needs={"h5py"}, short=True)


def _set_attr(group, key, value):
    group.attrs[key] = value


# --------------------------------------------------------------------------------------------- cases

def _levels_cases(rc):
    needs = {"convert"}
    setup = lambda d: _qcfs_model(rc, d)  # noqa: E731
    levels_msg = [r"levels", r"--T 4", r"L = 8"]
    return [
        rc.Case("calibrate --method levels at T < L", ["calibrate", "q.snn.h5", "-o", "out.snn.h5", "--method", "levels",
                                                       "--T", "4", "--quiet"],
                msg=levels_msg, setup=setup, needs=needs, outputs=["out.snn.h5"]),
        rc.Case("sweep --compare none,levels at T < L",
                ["sweep", "q.snn.h5", "--data", "q-images-idx3-ubyte", "--T", "4", "--compare", "none,levels", "--quiet"],
                msg=levels_msg, setup=setup, needs=needs),
        rc.Case("calibrate --method levels at T = L (sanity)",
                ["calibrate", "q.snn.h5", "-o", "out.snn.h5", "--method", "levels", "--T", "8", "--quiet"],
                expect=0, setup=setup, needs=needs, outputs=["out.snn.h5"]),
    ]


def _seed_cases(rc):
    cs = []
    for value in ("-1", "18446744073709551616", "1e23", "abc", "0x10", ""):
        cs.append(rc.Case(f"sweep --seed {value!r}", rc.sweep_args(["--encoding", "poisson", "--seed", value]),
                          msg=[r"--seed", SEED_RANGE], short=True))
    cs.append(rc.Case("sweep --seed=-1", rc.sweep_args(["--seed=-1"]), msg=[r"--seed", SEED_RANGE], short=True))
    cs.append(rc.Case("calibrate --seed -1", rc.calib_args("out.snn.h5", ["--seed", "-1"]),
                      msg=[r"--seed", SEED_RANGE], short=True, outputs=["out.snn.h5"]))
    cs.append(rc.Case("sweep --calib-seed 1e23", rc.sweep_args(["--compare", "ftbc", "--calib-data", "d-images-idx3-ubyte",
                                                                "--calib-seed", "1e23"]),
                      msg=[r"--calib-seed", SEED_RANGE], short=True))
    cs.append(rc.Case("sweep --seed 2^64-1 (sanity)", rc.sweep_args(["--encoding", "poisson", "--seed", SEED_RANGE]),
                      expect=0))
    return cs


def _pixel_cases(rc):
    def mk_255(d):
        need_normalisation(d)
        h5py, np = _h5py()
        with open(os.path.join(d, "d-images-idx3-ubyte"), "rb") as f:
            f.read(16)
            pixels = np.frombuffer(f.read(64 * 784), dtype=np.uint8).reshape(64, 1, 28, 28).astype(np.float32)
        rc.write_h5(os.path.join(d, "p255.h5"), pixels, np.arange(64, dtype=np.int64) % 10)

    def once(d, res):
        n = len(re.findall(r"warning:.*255", res.stderr))
        return [] if n == 1 else [f"the 0..255 warning appears {n} times, expected once"]

    def need_normalisation(d):
        h5py, _ = _h5py()
        with h5py.File(os.path.join(d, "m.snn.h5"), "r") as f:
            if "preprocessing" not in f:
                raise rc.Skip("m.snn.h5 has no normalisation to compare the pixels with (the model made without LibTorch)")

    def mk_normalised(d):
        need_normalisation(d)
        h5py, np = _h5py()
        pixels = rc.idx_images_as_float(os.path.join(d, "d-images-idx3-ubyte"), 64)  # (x - 0.286) / 0.353
        rc.write_h5(os.path.join(d, "norm.h5"), pixels, np.arange(64, dtype=np.int64) % 10)

    return [
        rc.Case("sweep on float images normalised already (the model normalises them again)",
                rc.sweep_args(data="norm.h5"), expect=0, setup=mk_normalised,
                msg=[r"warning", r"norm\.h5", r"normalised already"], needs={"h5py"}),
        rc.Case("sweep on float images in 0..255", rc.sweep_args(data="p255.h5"), expect=0, setup=mk_255,
                msg=[r"warning", r"p255\.h5", r"255", r"0\.\.1|\[0, 1\]"], check=once, needs={"h5py"}),
        rc.Case("sweep --compare on 0..255 floats, same file as --calib-data: one warning",
                rc.sweep_args(["--compare", "none,ftbc", "--calib-data", "p255.h5", "--batches", "1",
                               "--calib-batch-size", "16"], data="p255.h5"),
                expect=0, setup=mk_255, msg=[r"255"], check=once, needs={"h5py"}),
    ]


def _field_cases(rc):
    h5py_np = None

    def np():
        nonlocal h5py_np
        h5py_np = h5py_np or _h5py()
        return h5py_np[1]

    def empty_readout_bias(f, layers):
        g, n = _last(layers, "linear")
        if "bias" in f["layers"][g]:  # the api_example model (no LibTorch) has none
            del f["layers"][g]["bias"]
        f["layers"][g].create_dataset("bias", shape=(0,), dtype="float32")
        return n

    def transposed_weight(f, layers):
        g, n = _last(layers, "linear")
        w = f["layers"][g]["weight"][()]
        if w.shape[0] == w.shape[1]:
            raise _skip("the readout's weight is square: transposed, it has the same shape")
        del f["layers"][g]["weight"]
        f["layers"][g].create_dataset("weight", data=np().ascontiguousarray(w.T))
        return n

    def transposed_weight_no_bias(f, layers):
        g, n = _last(layers, "linear")
        if "bias" in f["layers"][g]:  # the api_example model (no LibTorch) has none
            del f["layers"][g]["bias"]
        return transposed_weight(f, layers)

    def layer_number(kind, key, value):
        def edit(f, layers):
            g, n = _first(layers, kind)
            _set_attr(f["layers"][g], "n:" + key, value)
            return n
        return edit

    neuron_number = lambda key, value: layer_number("neuron", key, value)  # noqa: E731
    conv_number = lambda key, value: layer_number("conv2d", key, value)  # noqa: E731

    def threshold(value):
        def edit(f, layers):
            g, n = _first(layers, "neuron")
            t = f["layers"][g]["threshold"]
            data = t[()]
            data[...] = value
            del f["layers"][g]["threshold"]
            f["layers"][g].create_dataset("threshold", data=data)
            return n
        return edit

    cs = [
        _field_case(rc, "empty readout bias", empty_readout_bias, [r"bias", r"empty"]),
        _field_case(rc, "transposed linear weight", transposed_weight, [r"weight", r"transposed"]),
        _field_case(rc, "transposed linear weight, no bias", transposed_weight_no_bias, [r"weight", r"transposed"]),
        _field_case(rc, "v_init = 1e30", neuron_number("v_init", 1e30), [r"v_init"]),
        _field_case(rc, "v_init = NaN", neuron_number("v_init", float("nan")), [r"v_init"]),
        _field_case(rc, "v_init = -0.5", neuron_number("v_init", -0.5), [r"v_init"]),
        _field_case(rc, "beta = 7", neuron_number("beta", 7.0), [r"beta"]),
        _field_case(rc, "levels = 1e9", neuron_number("levels", 1e9), [r"levels"]),
        _field_case(rc, "neuron channels = -3", neuron_number("channels", -3.0), [r"channels"]),
        _field_case(rc, "bias_constant = 0.5", neuron_number("bias_constant", 0.5), [r"bias_constant"]),
        _field_case(rc, "conv kernel_h = 0", conv_number("kernel_h", 0.0), [r"kernel_h"]),
        _field_case(rc, "conv stride_w = 2.5", conv_number("stride_w", 2.5), [r"stride_w"]),
        _field_case(rc, "conv pad_h = -1", conv_number("pad_h", -1.0), [r"pad_h"]),
        _field_case(rc, "threshold = 0", threshold(0.0), [r"threshold"]),
        _field_case(rc, "threshold = -Inf", threshold(float("-inf")), [r"threshold"]),
    ]

    def version(value):
        def setup(d):
            _edit_model(d, lambda f, layers: _set_attr(f, "format_version", value))
        return setup

    for v in (3.5, 99.0, float("nan"), -1.0):
        cs.append(rc.Case(f"model field: format_version = {v}", ["info", "e.snn.h5"], setup=version(v),
                          msg=[r"format_version"], needs={"h5py"}, short=True))

    def mean_nan(d):
        def edit(f, layers):
            if "preprocessing" not in f:
                raise _skip("m.snn.h5 has no preprocessing (the model made without LibTorch)")
            m = f["preprocessing"]["mean"][()]
            m[...] = float("nan")
            del f["preprocessing"]["mean"]
            f["preprocessing"].create_dataset("mean", data=m)
        _edit_model(d, edit)

    cs.append(rc.Case("model field: preprocessing mean = NaN", ["info", "e.snn.h5"], setup=mean_nan,
                      msg=[r"mean"], needs={"h5py"}, short=True))
    return cs


def _kind_cases(rc):
    """-o that holds a file of another kind: refused unless --overwrite; the same kind replaced."""
    refuse = [r"refus", r"--overwrite"]

    def put(src, dst):
        return lambda d: shutil.copy2(os.path.join(d, src), os.path.join(d, dst))

    def text(dst):
        def setup(d):
            with open(os.path.join(d, dst), "w") as f:
                f.write("my notes\n")
        return setup

    def empty(dst):
        return lambda d: open(os.path.join(d, dst), "w").close()

    def zero_reset_nir(d):
        p = rc.run_snnc(rc.convert_args("z.snn.h5", extra=["--reset", "zero", "--v-init", "0"]), d, timeout=120)
        if p.returncode != 0:
            raise rc.Skip("convert --reset zero failed: " + rc.first_line(p.stderr)[:120])
        p = rc.run_snnc(["export", "z.snn.h5", "-o", "z.nir"], d)
        if p.returncode != 0:
            raise rc.Skip("export failed: " + rc.first_line(p.stderr)[:120])

    def both(*setups):
        def setup(d):
            for s in setups:
                s(d)
        return setup

    cs = [
        rc.Case("export -o an existing TorchScript model", ["export", "z.snn.h5", "-o", "model.pt"],
                setup=both(zero_reset_nir, put("m.pt", "model.pt")), msg=refuse + [r"model\.pt", r"ZIP|TorchScript"],
                needs={"convert"}),
        rc.Case("export -o an existing TorchScript model --overwrite",
                ["export", "z.snn.h5", "-o", "model.pt", "--overwrite"],
                setup=both(zero_reset_nir, put("m.pt", "model.pt")), expect=0, outputs=["model.pt"],
                needs={"convert"}),
        rc.Case("export -o an existing HDF5 dataset", ["export", "z.snn.h5", "-o", "x.h5"],
                setup=both(zero_reset_nir, put("d.h5", "x.h5")), msg=refuse + [r"x\.h5"], needs={"convert", "h5py"}),
        rc.Case("export -o an existing NIR graph (same kind, sanity)", ["export", "z.snn.h5", "-o", "z.nir"],
                setup=zero_reset_nir, expect=0, outputs=["z.nir"], needs={"convert"}),
        rc.Case("calibrate -o an existing TorchScript model", rc.calib_args("model.pt"), setup=put("m.pt", "model.pt"),
                msg=refuse + [r"model\.pt"]),
        rc.Case("calibrate -o an existing text file", rc.calib_args("notes.txt"), setup=text("notes.txt"),
                msg=refuse + [r"notes\.txt"]),
        rc.Case("calibrate -o an existing empty file (sanity)", rc.calib_args("empty.snn.h5"), setup=empty("empty.snn.h5"),
                expect=0, outputs=["empty.snn.h5"]),
        rc.Case("sweep -o an existing model", rc.sweep_args(["-o", "other.snn.h5"]), setup=put("m.snn.h5", "other.snn.h5"),
                msg=refuse + [r"other\.snn\.h5", r"model"]),
        rc.Case("sweep -o an existing IDX file", rc.sweep_args(["-o", "copy-idx"]),
                setup=put("d-images-idx3-ubyte", "copy-idx"), msg=refuse + [r"copy-idx"]),
        rc.Case("convert -o an existing NIR graph", rc.convert_args("z.nir"), setup=zero_reset_nir,
                msg=refuse + [r"z\.nir", r"NIR"], needs={"convert"}),
        rc.Case("import -o an existing TorchScript model", ["import", "z.nir", "-o", "model.pt"],
                setup=both(zero_reset_nir, put("m.pt", "model.pt")), msg=refuse + [r"model\.pt"], needs={"convert"}),
        rc.Case("import -o an existing model (same kind, sanity)", ["import", "z.nir", "-o", "old.snn.h5"],
                setup=both(zero_reset_nir, put("m.snn.h5", "old.snn.h5")), expect=0, outputs=["old.snn.h5"],
                needs={"convert"}),
    ]
    return cs


def _path_cases(rc):
    long_path = "/".join(["d" * 200] * 25) + "/m.snn.h5"  # 5000 bytes: beyond PATH_MAX
    long_name = "n" * 300 + ".snn.h5"                       # one component beyond NAME_MAX
    too_long = [r"too long"]

    def not_found(d, res):
        return ["says 'not found' for a path that is too long"] if re.search(r"not found", res.stderr, re.I) else []

    return [
        rc.Case("info on a path longer than PATH_MAX", ["info", long_path], msg=too_long, check=not_found, short=True),
        rc.Case("info on a name longer than NAME_MAX", ["info", long_name], msg=too_long, check=not_found, short=True),
        rc.Case("sweep --data with a name longer than NAME_MAX", rc.sweep_args(data="x" * 300 + "-images-idx3-ubyte"),
                msg=too_long, check=not_found, short=True),
        rc.Case("calibrate -o a name longer than NAME_MAX", rc.calib_args(long_name), msg=too_long, short=True),
        rc.Case("eval --data with a name longer than NAME_MAX", ["eval", "m.snn.h5", "--data", "x" * 300 + ".h5"],
                msg=too_long, check=not_found, short=True),
        rc.Case("import a NIR file whose name is longer than NAME_MAX", ["import", "x" * 300 + ".nir", "-o", "o.snn.h5"],
                msg=too_long, check=not_found, short=True),
        rc.Case("convert a model whose name is longer than NAME_MAX", rc.convert_args("o.snn.h5", model="x" * 300 + ".pt"),
                msg=too_long, short=True),
    ]


def _mpi_cases(rc):
    mpirun = shutil.which("mpirun")

    def need_mpi(d):
        if not mpirun:
            raise rc.Skip("no mpirun")
        p = subprocess.run([rc.ENV.snnc, "--version"], capture_output=True, text=True)
        if p.returncode != 0:
            raise rc.Skip("snnc does not run")
        linked = subprocess.run(["ldd", rc.ENV.snnc], capture_output=True, text=True).stdout
        if "libmpi" not in linked:
            raise rc.Skip("snnc is built without MPI (each process runs alone)")

    launch = ('"$(command -v mpirun)" --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader "$SNNC" ')

    def once(d, res):
        probs = []
        n = len(re.findall(r"snnc[^\n]*error", res.stderr))
        if n != 1:
            probs.append(f"the error is printed {n} times, expected once")
        if "MPI_ABORT" in res.stderr:
            probs.append("stderr shows MPI_ABORT noise")
        return probs

    bad_level = " ".join(["sweep", "m.snn.h5", "--data", "d-images-idx3-ubyte", "--T", "4", "--limit", "32", "--quiet",
                          "--threads", "1", "--seed", "-1"])
    def need_mpi_and_qcfs(d):
        need_mpi(d)
        _qcfs_model(rc, d)

    levels = " ".join(["sweep", "q.snn.h5", "--data", "q-images-idx3-ubyte", "--T", "4", "--compare", "none,levels",
                       "--quiet", "--threads", "1"])
    return [rc.Case("mpirun -np 2 sweep --seed -1: one message", ("bash", launch + bad_level), setup=need_mpi,
                    expect=(1,), msg=[r"--seed"], check=once, timeout=60),
            rc.Case("mpirun -np 2 sweep --compare levels at T < L: one message, no MPI_ABORT banner",
                    ("bash", launch + levels), setup=need_mpi_and_qcfs, expect=(1,), msg=[r"levels", r"L = 8"],
                    check=once, needs={"convert"}, timeout=60)]


def cases(rc):
    global _RC
    _RC = rc
    cs = (_levels_cases(rc) + _seed_cases(rc) + _pixel_cases(rc) + _field_cases(rc) + _kind_cases(rc)
          + _path_cases(rc) + _mpi_cases(rc))
    for c in cs:
        c.group = GROUP
    return cs
