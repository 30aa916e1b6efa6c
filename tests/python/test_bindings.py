"""snnc's Python bindings: numbers equal to the CLI's, NumPy argument checks, GIL, Ctrl-C, errors."""
import io
import json
import os
import signal
import subprocess
import threading
import time

import h5py
import numpy as np
import pytest

import snnc
from snnc import _progress
from conftest import MEAN, STD

T = 4
CALIB = dict(batches=1, batch_size=64)
TEST_IMAGES = 300


def run_cli(*args):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{' '.join(map(str, args))}\n{p.stdout}\n{p.stderr}"
    return p.stdout


def layer_datasets(path):
    """Every dataset under /layers of a model file (weights, thresholds, calibration biases)."""
    out = {}
    with h5py.File(path, "r") as f:
        f["layers"].visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return out


@pytest.fixture(scope="module")
def pipeline(cli, work, repo, fmnist):
    """convert -> calibrate (ftbc) -> sweep, once through the CLI and once through the bindings."""
    model = os.path.join(repo, "examples", "models", "resnet_relu.pt2")
    mean, std = ",".join(map(str, MEAN)), ",".join(map(str, STD))
    c_conv, c_cal = os.path.join(work, "cli.snn.h5"), os.path.join(work, "cli.ftbc.snn.h5")
    run_cli(cli, "convert", model, "-o", c_conv, "--data", "fashion-mnist:train", "--mean", mean, "--std", std,
            "--device", "cpu", "--threads", "2", "--quiet")
    run_cli(cli, "calibrate", c_conv, "-o", c_cal, "--data", "fashion-mnist:train", "--T", T, "--method", "ftbc",
            "--batches", CALIB["batches"], "--batch-size", CALIB["batch_size"], "--device", "cpu", "--threads", "2",
            "--quiet")
    cli_sweep = json.loads(run_cli(cli, "sweep", c_cal, "--data", "fashion-mnist:test", "--T", T, "--limit",
                                   TEST_IMAGES, "--device", "cpu", "--threads", "2", "--json"))

    net = snnc.convert(model, data="fashion-mnist:train", mean=MEAN, std=STD, device="cpu", threads=2)
    p_conv, p_cal = os.path.join(work, "py.snn.h5"), os.path.join(work, "py.ftbc.snn.h5")
    net.save(p_conv)
    report = net.calibrate("ftbc", "fashion-mnist:train", T=T, device="cpu", threads=2, **CALIB)
    net.save(p_cal)
    result = net.sweep("fashion-mnist:test", T=T, limit=TEST_IMAGES, device="cpu", threads=2)
    return dict(net=net, report=report, result=result, cli_sweep=cli_sweep, files=(c_conv, c_cal, p_conv, p_cal))


def test_convert_calibrate_sweep_equal_the_cli(pipeline):
    c_conv, c_cal, p_conv, p_cal = pipeline["files"]
    for cli_file, py_file in ((c_conv, p_conv), (c_cal, p_cal)):
        a, b = layer_datasets(cli_file), layer_datasets(py_file)
        assert a.keys() == b.keys()
        for k in a:
            assert np.array_equal(a[k], b[k]), f"{k} differs between {cli_file} and {py_file}"
    assert any("bias" in k for k in layer_datasets(p_cal)), "calibration wrote no biases"
    r, c = pipeline["result"], pipeline["cli_sweep"]
    assert r.method == "ftbc" and r.images == TEST_IMAGES and r.timesteps == T
    assert r.accuracy.shape == (T,) and r.accuracy.tolist() == c["accuracy"]
    assert r.ann_accuracy == c["ann_accuracy"]
    assert r.firing_rate.shape == (len(r.neuron_layers), T)
    for layer, rate in zip(r.neuron_layers, r.mean_firing_rate):
        assert rate == pytest.approx(c["firing_rate"][layer], rel=1e-12)
    assert r.synaptic_ops.sum() == pytest.approx(c["synaptic_ops_per_image"], rel=1e-12)
    assert pipeline["report"]["method"] == "ftbc" and pipeline["report"]["images"] == CALIB["batch_size"]


def test_simulate_and_ann_agree_with_the_sweep(pipeline):
    net = pipeline["net"]
    data = snnc.load_dataset("fashion-mnist:test", limit=TEST_IMAGES)
    sim = net.simulate(data.images, T=T, device="cpu", threads=2, batch_size=128)
    assert sim.predictions.shape == (T, TEST_IMAGES) and sim.predictions.dtype == np.int32
    accuracy = 100.0 * (sim.predictions == data.labels[None, :]).mean(axis=1)
    assert np.allclose(accuracy, pipeline["result"].accuracy, rtol=0, atol=1e-9)
    assert sim.readout.shape == (TEST_IMAGES, net.num_outputs)
    assert np.array_equal(sim.readout.argmax(axis=1), sim.predictions[-1])
    scores = net.ann(data.images, device="cpu", threads=2)
    assert 100.0 * (scores.argmax(axis=1) == data.labels).mean() == pytest.approx(pipeline["result"].ann_accuracy)
    # uint8 images are scaled by 1/255 as the dataset readers scale them.
    raw = np.round(data.images * 255).astype(np.uint8)
    assert np.array_equal(net.ann(raw[:16], device="cpu"), net.ann(data.images[:16], device="cpu"))
    # Non-contiguous input (a strided view) is accepted and gives the same numbers.
    doubled = np.repeat(data.images[:8], 2, axis=0)[::2]
    assert not doubled.flags.c_contiguous
    assert np.array_equal(net.ann(doubled, device="cpu"), net.ann(data.images[:8], device="cpu"))


def test_numpy_arguments_of_the_wrong_dtype_or_shape_raise_value_error(pipeline):
    net = pipeline["net"]
    good = np.zeros((2, 1, 28, 28), np.float32)
    cases = [good.astype(np.float64), good.astype(np.int32), good[:, 0], np.zeros((2, 3, 28, 28), np.float32),
             np.zeros((0, 1, 28, 28), np.float32), [[1.0]]]
    for bad in cases:
        for call in (lambda: net.ann(bad), lambda: net.simulate(bad, T=2)):
            with pytest.raises(ValueError, match=r"\[N, 1, 28, 28\]"):
                call()
    with pytest.raises(ValueError, match=r"labels.*\[2\]"):
        snnc.Dataset(good, np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="labels"):
        snnc.Dataset(good, np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="outside"):
        snnc.Dataset(good, np.array([0, -1]))
    with pytest.raises(TypeError, match="dataset spec"):
        net.sweep(42, T=2)
    with pytest.raises(ValueError, match="T must be at least 1"):
        net.simulate(good, T=0)


def test_numpy_dataset_gives_the_same_sweep_as_the_file(pipeline):
    net = pipeline["net"]
    data = snnc.load_dataset("fashion-mnist:test", limit=200)
    from_file = net.sweep(data, T=T, device="cpu", threads=2, ann=False)
    from_arrays = net.sweep((data.images.copy(), data.labels.astype(np.int64)), T=T, device="cpu", threads=2, ann=False)
    assert np.array_equal(from_file.accuracy, from_arrays.accuracy)
    assert np.isnan(from_file.ann_accuracy)


def test_the_gil_is_released_while_simulating(pipeline):
    net = pipeline["net"]
    images = snnc.load_dataset("fashion-mnist:test", limit=256).images
    count, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    worker = threading.Thread(target=spin)
    worker.start()
    try:
        time.sleep(0.3)
        c0, t0 = count[0], time.monotonic()
        time.sleep(0.3)
        rate = (count[0] - c0) / (time.monotonic() - t0)  # increments per second with the GIL to spare
        c0, t0 = count[0], time.monotonic()
        net.simulate(images, T=32, device="cpu", threads=1)
        during, seconds = count[0] - c0, time.monotonic() - t0
    finally:
        stop.set()
        worker.join()
    assert seconds > 0.3, "the simulation was too short to tell"
    # Holding the GIL, the thread would get at most a switch interval (5 ms) before the call: the Python
    # thread must have run through a good part of the simulation instead.
    assert during > 0.2 * rate * seconds, f"{during} increments in {seconds:.2f} s (free rate {rate:.0f}/s)"


def test_ctrl_c_stops_a_sweep_and_leaves_the_network_usable(pipeline):
    net = pipeline["net"].copy()
    before = net.sweep("fashion-mnist:test", T=2, limit=64, device="cpu", threads=2, ann=False)
    calls = []
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        net.sweep("fashion-mnist:test", T=32, batch_size=16, device="cpu", threads=2, ann=False,
                  progress=lambda done, total, stage: calls.append(done))
    timer.cancel()
    # Stopped between batches, long before the 625th (the check before a callback raises instead of calling it).
    assert len(calls) < 10000 // 16 - 1, "the sweep ran to its end"
    after = net.sweep("fashion-mnist:test", T=2, limit=64, device="cpu", threads=2, ann=False)
    assert np.array_equal(before.accuracy, after.accuracy)


def test_an_interrupted_calibration_leaves_the_network_unchanged(pipeline, work):
    net = snnc.load(pipeline["files"][0])
    assert net.calibration is None
    def interrupt(done, total, stage):
        if done >= 1:
            os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        net.calibrate("ftbc", "fashion-mnist:train", T=T, batches=2, batch_size=32, device="cpu", progress=interrupt)
    assert net.calibration is None
    path = os.path.join(work, "interrupted.snn.h5")
    net.save(path)
    assert layer_datasets(path).keys() == layer_datasets(pipeline["files"][0]).keys()


def test_errors_carry_snnc_messages(pipeline, work):
    net = pipeline["net"]
    with pytest.raises(snnc.Error, match="nope.snn.h5"):
        snnc.load(os.path.join(work, "nope.snn.h5"))
    assert issubclass(snnc.Error, RuntimeError)
    with pytest.raises(snnc.Error, match="unknown calibration method 'bogus'.*ftbc"):
        net.copy().calibrate("bogus", "fashion-mnist:train", T=2)
    with pytest.raises(snnc.Error, match="bogus"):
        net.sweep("fashion-mnist:bogus", T=2)
    with pytest.raises(snnc.Error, match="device"):
        net.sweep("fashion-mnist:test", T=2, limit=8, device="tpu")
    # reset by subtraction has no NIR equivalent: refused, naming the layer, and nothing is written.
    nir = os.path.join(work, "refused.nir")
    with pytest.raises(snnc.Error, match=net.neuron_layers[0]):
        net.export_nir(nir)
    assert not os.path.exists(nir)


def test_save_never_replaces_a_file_unasked(pipeline, work):
    path = os.path.join(work, "kept.snn.h5")
    with open(path, "wb") as f:
        f.write(b"precious")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        pipeline["net"].save(path)
    assert open(path, "rb").read() == b"precious"
    pipeline["net"].save(path, overwrite=True)
    again = snnc.load(path)
    assert again.calibration == "ftbc" and again.input_shape == (1, 28, 28)
    assert [l["name"] for l in again.layers] == [l["name"] for l in pipeline["net"].layers]


def test_convert_a_torch_module(fmnist):
    """A torch.nn.Module (scripted by snnc.convert) becomes a network whose ANN view is the module."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 3, padding=1), torch.nn.BatchNorm2d(6), torch.nn.ReLU(), torch.nn.AvgPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(6 * 14 * 14, 10))
    with torch.no_grad():
        module[1].running_mean.uniform_(-0.2, 0.2)
        module[1].running_var.uniform_(0.5, 2.0)
    module.train()
    data = snnc.load_dataset("fashion-mnist:train", limit=200)
    net = snnc.convert(module, data=(data.images, data.labels), mean=MEAN, std=STD, device="cpu", progress=False)
    assert module.training, "convert must give the module back in the mode it came in"
    assert net.metadata["batchnorms_folded"] == "1"
    module.eval()
    with torch.no_grad():
        reference = module((torch.from_numpy(data.images[:32]) - MEAN[0]) / STD[0]).numpy()
    ours = net.ann(data.images[:32], device="cpu")
    assert np.abs(ours - reference).max() <= 1e-4 * np.abs(reference).max()
    with pytest.raises(TypeError, match="torch.nn.Module"):
        snnc.convert(object())


def test_progress_bar_only_on_a_terminal():
    assert _progress.resolve(None, "x") is None  # pytest captures stderr: not a terminal
    assert _progress.resolve(False, "x") is None
    assert isinstance(_progress.resolve(True, "x"), _progress.Bar)
    with pytest.raises(TypeError):
        _progress.resolve("yes", "x")
    out = io.StringIO()
    bar = _progress.Bar("sweep", stream=out)
    bar(1, 3)
    bar(3, 3)
    assert "sweep" in out.getvalue() and "3/3" in out.getvalue() and out.getvalue().endswith("\n")


def test_help_is_useful():
    assert "Accuracy at every t" in snnc.Network.sweep.__doc__
    assert "FTBC" in snnc.Network.calibrate.__doc__ or "Forward" in snnc.Network.calibrate.__doc__
    assert "uint8 or float32" in snnc.Network.simulate.__doc__
    assert "torch.nn.Module" in snnc.convert.__doc__
    assert set(snnc.calibration_methods()) >= {"ftbc", "ftbc-paper", "light", "rts"}


def test_import_nir_reads_what_export_nir_writes(repo, work, fmnist):
    """snnc.import_nir (as `snnc import`): a network exported to NIR comes back with the same sweep, bit for bit;
    what snnc cannot run is snnc.Error naming the node; bad arguments are ValueError."""
    model = os.path.join(repo, "examples", "models", "resnet_relu.pt2")
    net = snnc.convert(model, data="fashion-mnist:train", mean=MEAN, std=STD, limit=256, reset="zero", v_init=0.0,
                       check=False, threads=2)
    path = os.path.join(work, "round_trip.nir")
    net.export_nir(path)
    back = snnc.import_nir(path)
    a = net.sweep("fashion-mnist:test", T=8, limit=64, threads=2, progress=False)
    b = back.sweep("fashion-mnist:test", T=8, limit=64, threads=2, progress=False)
    assert a.accuracy.tolist() == b.accuracy.tolist()
    with h5py.File(path, "r+") as f:  # an IF neuron that resets to 1: NIR allows it, snnc's neurons reset to 0
        name = next(k for k in f["node/nodes"] if f["node/nodes"][k]["type"][()] == b"IF")
        f["node/nodes"][name]["v_reset"][...] = 1.0
    with pytest.raises(snnc.Error, match=name):
        snnc.import_nir(path)
    with pytest.raises(ValueError, match="dt"):
        snnc.import_nir(path, dt=0.0)
    with pytest.raises(ValueError, match="input_shape"):
        snnc.import_nir(path, input_shape=(1, 28))
