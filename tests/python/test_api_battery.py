"""The Python API as a careless or hostile caller uses it: every bad argument is refused before any work,
with the CLI's limits and words (snn/limits.hpp is the one source of both), as snnc.Error."""
import os
import pathlib
import re
import signal
import subprocess
import threading
import time
import warnings

import h5py
import numpy as np
import pytest

import snnc
from conftest import MEAN, STD

GOOD = np.random.default_rng(0).random((4, 1, 28, 28), dtype=np.float32)
LABELS = np.array([0, 1, 2, 3], np.int64)


@pytest.fixture(scope="module")
def net(repo, fmnist):
    model = os.path.join(repo, "examples", "models", "resnet_relu.pt2")
    return snnc.convert(model, data="fashion-mnist:train", limit=128, mean=MEAN, std=STD, check=False, threads=2,
                        progress=False)


@pytest.fixture(scope="module")
def model_file(net, work):
    path = os.path.join(work, "battery.snn.h5")
    net.save(path, overwrite=True)
    return path


def cli_error(cli, *args):
    """The CLI's one-line error for a command that must fail (exit 1)."""
    p = subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    lines = [l for l in p.stderr.splitlines() if l.startswith("snnc: error: ")]
    assert len(lines) == 1, p.stderr
    return lines[0][len("snnc: error: "):]


def py_error(call, kind=snnc.Error):
    with pytest.raises(kind) as e:
        call()
    assert isinstance(e.value, snnc.Error), f"{type(e.value).__name__} is not a snnc.Error: {e.value}"
    return str(e.value)


# ---- ranges: the same limit and the same words as the CLI ------------------------------------------------

RANGES = [  # (CLI command and option, value, Python call's keyword, Python parameter name)
    ("sweep", "--T", 0, "T"), ("sweep", "--T", 10**6, "T"), ("sweep", "--threads", 100000, "threads"),
    ("sweep", "--batch-size", 0, "batch_size"), ("sweep", "--batch-size", 2**21, "batch_size"),
    ("sweep", "--limit", -1, "limit"), ("calibrate", "--alpha", 0, "alpha"), ("calibrate", "--batches", 0, "batches"),
    ("calibrate", "--iters", 0, "iters"), ("calibrate", "--T", 10**6, "T"), ("sweep", "--threads", -1, "threads"),
]


@pytest.mark.parametrize("command,option,value,keyword", RANGES)
def test_ranges_give_the_clis_error(net, model_file, work, cli, command, option, value, keyword):
    args = [command, model_file, "--data", "fashion-mnist:test", option, value]
    if command == "calibrate":
        args += ["-o", os.path.join(work, "never.snn.h5")] + (["--T", 4] if option != "--T" else [])
    expected = cli_error(cli, *args)
    assert expected.startswith(option + " ")
    if command == "sweep":
        call = lambda: net.sweep("fashion-mnist:test", **{"T": 2, keyword: value})
    else:
        call = lambda: net.copy().calibrate("ftbc", "fashion-mnist:train", **{"T": 2, keyword: value})
    got = py_error(call, snnc.ArgumentError)
    assert got == keyword + expected[len(option):], (got, expected)
    assert isinstance(snnc.ArgumentError(got), ValueError)


def test_simulate_and_ann_check_the_same_ranges(net):
    assert "T must be at most 100000, got 1000000" in py_error(lambda: net.simulate(GOOD, T=10**6), snnc.ArgumentError)
    assert "got 1" + "0" * 30 in py_error(lambda: net.simulate(GOOD, T=10**30), snnc.ArgumentError)
    assert "threads must be at most" in py_error(lambda: net.ann(GOOD, threads=100000), snnc.ArgumentError)
    assert "batch_size must be at least 1" in py_error(lambda: net.ann(GOOD, batch_size=0), snnc.ArgumentError)
    cores = int(re.search(r"at most (\d+)", py_error(lambda: net.ann(GOOD, threads=10**9))).group(1))
    assert cores == 8 * os.cpu_count()
    assert net.ann(GOOD, threads=cores, device="cpu").shape == (4, net.num_outputs)  # the limit itself runs


@pytest.mark.parametrize("seed", [-1, 2**64, 2**70])
def test_seeds_out_of_range_are_errors_not_clamps(net, seed):
    message = py_error(lambda: net.simulate(GOOD, T=2, seed=seed, encoding="poisson"), snnc.ArgumentError)
    assert message == f"seed must be a whole number in [0, 18446744073709551615], got '{seed}'"


def test_a_seed_with_direct_encoding_is_an_error_as_on_the_cli(net):
    # It would do nothing: direct encoding draws no random numbers.
    for call in (lambda: net.simulate(GOOD, T=2, seed=3), lambda: net.sweep("fashion-mnist:test", T=2, seed=0)):
        assert py_error(call, snnc.ArgumentError) == "seed has no effect with encoding 'direct' (it seeds Poisson encoding)"


def test_the_largest_seed_is_a_seed(net):
    a = net.simulate(GOOD, T=3, seed=2**64 - 1, encoding="poisson", device="cpu", threads=1)
    b = net.simulate(GOOD, T=3, seed=2**64 - 1, encoding="poisson", device="cpu", threads=1)
    assert np.array_equal(a.readout, b.readout)


# ---- types: TypeErrors that are snnc.Errors, naming the parameter --------------------------------------------

TYPES = [("T", "8"), ("T", 2.5), ("T", True), ("T", None), ("threads", 1.0), ("batch_size", [4]), ("seed", 1e23),
         ("seed", "7"), ("device", 1), ("encoding", None), ("ann", 1), ("limit", "all")]


@pytest.mark.parametrize("keyword,value", TYPES)
def test_wrong_types_are_refused_by_name(net, keyword, value):
    message = py_error(lambda: net.sweep("fashion-mnist:test", **{"T": 2, keyword: value}), snnc.ArgumentTypeError)
    assert message.startswith(keyword + " must be"), message
    assert isinstance(snnc.ArgumentTypeError(message), TypeError)


def test_numpy_scalars_are_numbers(net):
    sim = net.simulate(GOOD, T=np.int64(2), seed=np.uint64(3), encoding="poisson", batch_size=np.int32(2), device="cpu",
                       threads=1)
    assert sim.timesteps == 2 and sim.images == 4


def test_convert_checks_its_arguments_before_any_work(repo):
    model = os.path.join(repo, "examples", "models", "resnet_relu.pt2")
    for kwargs, text in [(dict(percentile=150), "percentile must be at most 100"), (dict(beta=0.0), "beta must be greater than 0"),
                         (dict(v_init=float("nan")), "v_init must be a number"), (dict(std=[0.0]), r"std\[0\] must be greater"),
                         (dict(input_shape=(1, 28)), "input_shape must be"), (dict(check_images=0), "check_images must be at least 1"),
                         (dict(neuron="izhikevich"), "neuron must be one of if, lif")]:
        assert re.search(text, py_error(lambda: snnc.convert(model, **kwargs), snnc.ArgumentError)), kwargs
    for kwargs in (dict(limit=2.5), dict(mean=["a"]), dict(check="yes"), dict(data=42)):
        py_error(lambda: snnc.convert(model, **kwargs), snnc.ArgumentTypeError)


# ---- NaN and Inf: refused as the CLI refuses them in a file ------------------------------------------------


def nan_images():
    bad = GOOD.copy()
    bad[2, 0, 3, 4] = np.nan
    return bad


def test_nan_images_are_refused_on_every_path(net):
    bad = nan_images()
    suffix = "image 2 has a NaN pixel (element 88)"
    assert py_error(lambda: net.simulate(bad, T=2)) == "images: " + suffix
    assert py_error(lambda: net.ann(bad)) == "images: " + suffix
    assert py_error(lambda: net.sweep((bad, LABELS), T=2)).endswith(suffix)
    assert py_error(lambda: snnc.Dataset(bad, LABELS)).endswith(suffix)
    assert py_error(lambda: net.copy().calibrate("ftbc", (bad, LABELS), T=2, batches=1, batch_size=4)).endswith(suffix)
    inf = GOOD.copy()
    inf[1, 0, 0, 0] = -np.inf
    assert py_error(lambda: net.simulate(inf, T=2)) == "images: image 1 has an infinite pixel (element 0)"


def test_a_dataset_altered_after_construction_is_checked_at_use(net):
    data = snnc.Dataset(GOOD, LABELS)
    data.images[3, 0, 27, 27] = np.nan  # the images are a writable view
    assert py_error(lambda: net.sweep(data, T=2)).endswith("image 3 has a NaN pixel (element 783)")


def test_nan_images_give_the_clis_error(net, cli, model_file, work):
    path = os.path.join(work, "nan_images.h5")
    with h5py.File(path, "w") as f:
        f["images"] = nan_images()
        f["labels"] = LABELS
    expected = cli_error(cli, "sweep", model_file, "--data", path, "--T", 2)
    assert expected.endswith("image 2 has a NaN pixel (element 88)"), expected
    assert py_error(lambda: net.simulate(nan_images(), T=2)).split(": ", 1)[1] == expected.split(": ", 1)[1]


def test_0_to_255_float_images_get_a_warning_naming_the_cause(net):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net.simulate(GOOD * 255, T=2, device="cpu", threads=1)
    assert any("divide by 255" in str(w.message) for w in caught), [str(w.message) for w in caught]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net.simulate(GOOD, T=2, device="cpu", threads=1)  # [0, 1] pixels: no warning


# ---- labels ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("labels,text", [(np.array([0, 1, 2, -1]), "outside"), (np.array([0, 1, 2, 2**20]), "outside"),
                                          (np.zeros(4, np.float32), "integer array"), (np.zeros(4, bool), "integer array"),
                                          (np.zeros(3, np.int64), r"\[4\]"), (np.zeros((4, 1), np.int64), r"\[4\]")])
def test_bad_labels_are_refused(net, labels, text):
    assert re.search(text, py_error(lambda: net.sweep((GOOD, labels), T=2), snnc.ArgumentError))


def test_labels_the_readout_cannot_produce_are_refused(net):
    assert "label" in py_error(lambda: net.sweep((GOOD, np.array([0, 1, 2, 10])), T=2)).lower()


# ---- paths ----------------------------------------------------------------------------------------------------


def test_a_nul_byte_in_a_path_is_an_error_not_a_shorter_path(net, model_file, work):
    cut = model_file + "\0ignored"
    for call in (lambda: snnc.load(cut), lambda: net.save(os.path.join(work, "x.snn.h5\0y")),
                 lambda: net.export_nir(os.path.join(work, "x.nir\0y")), lambda: snnc.load_dataset("fashion-mnist:test\0x"),
                 lambda: net.sweep("fashion-mnist:test\0x", T=2), lambda: snnc.import_nir(cut)):
        assert "NUL byte" in py_error(call, snnc.ArgumentError)
    assert not os.path.exists(os.path.join(work, "x.snn.h5"))


def test_save_to_a_directory_says_so(net, work):
    assert "is a directory" in py_error(lambda: net.save("."))
    assert "is a directory" in py_error(lambda: net.save(work, overwrite=True))
    assert "No such file or directory" in py_error(lambda: net.save(os.path.join(work, "missing", "m.snn.h5")))


def test_paths_may_be_pathlib_or_bytes(net, work):
    path = pathlib.Path(work) / "pathlike.snn.h5"
    net.save(path, overwrite=True)
    assert os.path.getsize(path) > 0
    assert "path must be a path" in py_error(lambda: net.save(42), snnc.ArgumentTypeError)


def test_export_never_replaces_a_file_of_another_kind(net, work):
    precious = os.path.join(work, "model.pt")
    with open(precious, "wb") as f:
        f.write(b"a TorchScript model")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        net.export_nir(precious)
    with pytest.raises(FileExistsError):
        net.save(precious)
    assert open(precious, "rb").read() == b"a TorchScript model"


# ---- interrupts -----------------------------------------------------------------------------------------------


def test_ctrl_c_stops_a_simulation_between_batches(net):
    images = snnc.load_dataset("fashion-mnist:test", limit=4000).images
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            net.simulate(images, T=32, batch_size=8, device="cpu", threads=2)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 10, "the simulation did not stop soon after Ctrl-C"
    assert net.simulate(GOOD, T=2, device="cpu", threads=1).images == 4  # still usable
