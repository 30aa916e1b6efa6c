"""snnc: spiking neural networks converted from trained CNNs, simulated fast, calibrated with FTBC.

    import snnc
    net = snnc.convert("cnn.pt", data="fashion-mnist:train", mean=[0.2860], std=[0.3530])
    net.calibrate("ftbc", "fashion-mnist:train", T=8)
    result = net.sweep("fashion-mnist:test", T=8)
    print(result.accuracy)            # NumPy [T]: accuracy (%) after every step

Networks (snnc.Network) are the contents of .snn.h5 files (snnc.load / net.save). Data arguments take a
dataset spec ('fashion-mnist:test', an IDX/CIFAR/HDF5 file), an snnc.Dataset, or a pair (images,
labels) of NumPy arrays. Long calls release the GIL, show a progress bar on a terminal and stop on
Ctrl-C. Errors from snnc are snnc.Error (a RuntimeError) with snnc's message; bad arguments are
ValueError / TypeError.
"""
import os
import tempfile

from . import _core
from ._core import Dataset, Error, Network, Simulation, SweepResult, load, load_dataset

__version__ = _core.__version__
__all__ = ["Dataset", "Error", "Network", "Simulation", "SweepResult", "load", "load_dataset", "convert",
           "calibration_methods", "__version__"]

if _core.has_calibration:
    from ._core import calibration_methods


def convert(model, data=None, *, mean=None, std=None, input_shape=None, limit=1000, norm="percentile",
            percentile=99.99, channelwise=False, neuron="if", beta=0.9, reset="subtract", v_init=0.5,
            spikes="auto", check=True, check_tolerance=1e-3, check_moved=1e-3, check_images=16, batch_size=128,
            device="auto", threads=0, progress=None, example_input=None):
    """Converts a trained CNN into an snnc.Network, as `snnc convert` does.

    model: a TorchScript file (torch.jit.script / torch.jit.trace, saved), or a torch.nn.Module, which
        is scripted here (torch.jit.script; traced on `example_input` if scripting fails and one is given).
    data: calibration images for the thresholds of ReLU neurons and the faithfulness check (training
        data: a spec such as 'fashion-mnist:train', a file, an snnc.Dataset or (images, labels)); the
        first `limit` images are used. Not needed when every activation carries its threshold (clip, QCFS).
    mean, std: the per-channel input normalisation the CNN was trained with (stored in the network).
    input_shape: (C, H, W), when there is no data.
    norm, percentile, channelwise: how ReLU thresholds are chosen (percentile of the positive activations).
    neuron 'if' | 'lif' (beta), reset 'subtract' | 'zero', v_init (fraction of θ), spikes 'signed' (a
        neuron that has fired more than its summed input warrants sends −θ) | 'binary' | 'auto' (signed
        with reset 'subtract', binary with 'zero').
    check: compare every layer and the logits with LibTorch (check_tolerance, check_moved, check_images);
        a failure raises snnc.Error saying where the import departs.
    """
    if not _core.has_torchscript_import:
        raise Error("this snnc was built without LibTorch, so it cannot read TorchScript models "
                    "(install libtorch-dev and rebuild)")
    mean = [] if mean is None else [float(v) for v in mean]
    std = [] if std is None else [float(v) for v in std]
    shape = [] if input_shape is None else [int(v) for v in input_shape]
    args = dict(data=data, limit=int(limit), mean=mean, std=std, input_shape=shape, norm=norm,
                percentile=float(percentile), channelwise=bool(channelwise), neuron=neuron, beta=float(beta),
                reset=reset, v_init=float(v_init), spikes=spikes, check=bool(check), check_tolerance=float(check_tolerance),
                check_moved=float(check_moved), check_images=int(check_images), batch_size=int(batch_size),
                device=device, threads=int(threads), progress=progress)
    if isinstance(model, (str, os.PathLike)):
        return _core._convert_file(os.fspath(model), **args)
    scripted = _script(model, example_input)
    with tempfile.TemporaryDirectory(prefix="snnc-convert-") as tmp:
        path = os.path.join(tmp, "model.pt")
        scripted.save(path)
        net = _core._convert_file(path, **args)
    return net


def _script(module, example_input):
    """A torch.nn.Module as TorchScript, in eval mode (BatchNorm with its running statistics)."""
    import torch

    if isinstance(module, torch.jit.ScriptModule):
        return module
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"model: expected a TorchScript file path or a torch.nn.Module, got {type(module).__name__}")
    was_training = module.training
    module.eval()
    try:
        try:
            return torch.jit.script(module)
        except Exception as scripting_error:  # noqa: BLE001 - TorchScript raises many kinds
            if example_input is None:
                raise TypeError("model: torch.jit.script failed on this module; pass example_input= (a batch "
                                f"of images) to trace it instead ({scripting_error})") from scripting_error
            with torch.no_grad():
                return torch.jit.trace(module, example_input)
    finally:
        module.train(was_training)
