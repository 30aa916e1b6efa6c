"""snnc: spiking neural networks converted from trained CNNs, simulated fast, calibrated with FTBC.

    import snnc
    net = snnc.convert("cnn.pt", data="fashion-mnist:train", mean=[0.2860], std=[0.3530])
    net.calibrate("ftbc", "fashion-mnist:train", T=8)
    result = net.sweep("fashion-mnist:test", T=8)
    print(result.accuracy)            # NumPy [T]: accuracy (%) after every step

Networks (snnc.Network) are the contents of .snn.h5 files (snnc.load / net.save). Data arguments take a
dataset spec ('fashion-mnist:test', an IDX/CIFAR/HDF5 file), an snnc.Dataset, or a pair (images,
labels) of NumPy arrays. Long calls release the GIL, show a progress bar on a terminal and stop on
Ctrl-C. Errors from snnc are snnc.Error (a RuntimeError) with snnc's message. Arguments are checked
before any work starts, against the CLI's limits and in its words: a wrong type raises
snnc.ArgumentTypeError (a TypeError), a value out of range snnc.ArgumentError (a ValueError); both are
snnc.Error.
"""
import importlib.util
import os
import sys
import tempfile

# torch first when it is installed: it loads its own CUDA runtime by full path, and a CUDA build of
# _core loaded before it would bring the toolkit's copy too (two libcudart in one process).
if importlib.util.find_spec("torch") is not None:
    import torch  # noqa: F401

from . import _core

# The reference runtime's script of the faithfulness check: an installed package (pip install .) carries it;
# a build tree's module knows it from the source tree.
_reference_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_reference_runtime.py")
if os.path.exists(_reference_script):
    os.environ.setdefault("SNNC_REFERENCE_SCRIPT", _reference_script)
from ._core import (ArgumentError, ArgumentTypeError, Dataset, Error, Network, Simulation, SweepResult, import_nir, load,
                    load_dataset)

__version__ = _core.__version__
__all__ = ["ArgumentError", "ArgumentTypeError", "Dataset", "Error", "Network", "Simulation", "SweepResult", "import_nir", "load", "load_dataset", "convert",
           "calibration_methods", "__version__"]

if _core.has_calibration:
    from ._core import calibration_methods


def convert(model, data=None, *, mean=None, std=None, input_shape=None, limit=1000, norm="percentile",
            percentile=99.99, channelwise=False, neuron="if", beta=0.9, reset="subtract", v_init=0.5,
            spikes="auto", check=True, check_tolerance=1e-3, check_moved=1e-3, check_images=16, batch_size=128,
            device="auto", threads=0, progress=None, example_input=None):
    """Converts a trained CNN into an snnc.Network, as `snnc convert` does.

    model: a torch.nn.Module, exported here with torch.export (on `example_input`, a batch of images;
        without one, on zeros of `input_shape` or of the data's image shape); or the path of a model file:
        a torch.export program (torch.export.save, .pt2), an ONNX model (torch.onnx.export) or TorchScript
        (torch.jit.script / torch.jit.trace, saved): the format is recognised by content.
    data: calibration images for the thresholds of ReLU neurons and the faithfulness check (training
        data: a spec such as 'fashion-mnist:train', a file, an snnc.Dataset or (images, labels)); the
        first `limit` images are used. Not needed when every activation carries its threshold (clip, QCFS).
    mean, std: the per-channel input normalisation the CNN was trained with (stored in the network).
    input_shape: (C, H, W), when there is no data (.pt2 and ONNX files record it).
    norm, percentile, channelwise: how ReLU thresholds are chosen (percentile of the positive activations).
    neuron 'if' | 'lif' (beta), reset 'subtract' | 'zero', v_init (fraction of θ), spikes 'signed' (a
        neuron that has fired more than its summed input warrants sends −θ) | 'binary' | 'auto' (signed
        with reset 'subtract', binary with 'zero').
    check: compare every layer and the logits with the format's own runtime (torch for modules and
        .pt2, onnxruntime for ONNX, LibTorch for TorchScript; check_tolerance, check_moved,
        check_images); a failure raises snnc.Error saying where the import departs.
    """
    if not _core.has_calibration:
        raise Error("this snnc was built without its conversion library")
    # Passed as given: the C++ side checks every type and range (as the CLI does), before any work.
    args = dict(limit=limit, mean=mean, std=std, input_shape=input_shape, norm=norm, percentile=percentile,
                channelwise=channelwise, neuron=neuron, beta=beta, reset=reset, v_init=v_init, spikes=spikes,
                check=check, check_tolerance=check_tolerance, check_moved=check_moved, check_images=check_images,
                batch_size=batch_size, device=device, threads=threads)
    _core._check_convert_arguments(data, **args)
    # The check's reference runtime runs in this very interpreter: it has the torch the model came from.
    os.environ.setdefault("SNNC_PYTHON", sys.executable)
    if isinstance(model, (str, bytes, os.PathLike)):
        return _core._convert_file(model, data, **args, progress=progress)
    with tempfile.TemporaryDirectory(prefix="snnc-convert-") as tmp:
        path = os.path.join(tmp, "model.pt2")
        _export(model, _example_input(example_input, input_shape, data), path)
        return _core._convert_file(path, data, **args, progress=progress)


def _example_input(example_input, input_shape, data):
    """A batch to export a module on: the one given, else zeros of the input shape or of the data's images."""
    import torch

    if example_input is not None:
        if not isinstance(example_input, torch.Tensor) or example_input.dim() != 4:
            raise TypeError("example_input: expected a torch.Tensor [N, C, H, W]")
        return example_input
    shape = None
    if input_shape is not None:
        shape = tuple(int(v) for v in input_shape)
    elif isinstance(data, Dataset):
        shape = tuple(data.image_shape)
    elif isinstance(data, tuple) and len(data) == 2 and hasattr(data[0], "shape"):
        shape = tuple(data[0].shape[1:])
    elif isinstance(data, (str, os.PathLike)):
        shape = tuple(load_dataset(os.fspath(data), limit=1).image_shape)
    if shape is None or len(shape) != 3:
        raise TypeError("model: a torch.nn.Module needs example_input= (a batch [N, C, H, W]) or input_shape="
                        "(C, H, W) to be exported with torch.export")
    return torch.zeros((2,) + shape)


def _export(module, example_input, path):
    """A torch.nn.Module exported with torch.export, in eval mode (BatchNorm with its running statistics)."""
    import torch

    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"model: expected a model file path or a torch.nn.Module, got {type(module).__name__}")
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            program = torch.export.export(module, (example_input.float(),))
        torch.export.save(program, path)
    except Exception as e:  # noqa: BLE001 - torch.export raises many kinds
        raise TypeError(f"model: torch.export cannot export this module: {str(e).splitlines()[0]}") from e
    finally:
        module.train(was_training)
