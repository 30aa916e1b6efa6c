"""HDF5 storage tricks (issue 36): an input's values must come from the input's own bytes.

External raw storage (values read from another file, e.g. /etc/os-release), virtual datasets, external
and soft links, and headers that declare far more bytes than the file holds are each refused, by name,
in every HDF5 reader: datasets, models and NIR graphs. Each case also checks that the files it was given
are left as they were (run_cases.py's generic checks).
"""

import os
import shutil

GROUP = "hdf5 storage"


def _h5py():
    import h5py  # noqa: PLC0415 - only when h5py is there (needs={"h5py"})
    import numpy as np  # noqa: PLC0415
    return h5py, np


def _dataset_with(d, images_kind):
    """d.h5's images, kept as the trick `images_kind` says, labels as they were: trick.h5."""
    h5py, np = _h5py()
    with h5py.File(os.path.join(d, "d.h5"), "r") as f:
        images, labels = f["images"][()], f["labels"][()]
    path = os.path.join(d, "trick.h5")
    raw = os.path.join(d, "pixels.raw")
    with h5py.File(path, "w") as f:
        f.create_dataset("labels", data=labels)
        if images_kind == "external storage":
            images.tofile(raw)
            f.create_dataset("images", shape=images.shape, dtype=images.dtype,
                             external=[(raw, 0, images.nbytes)])
        elif images_kind == "external storage of another file":
            f.create_dataset("images", shape=(1, 1, 4, 4), dtype="uint8", external=[("/etc/os-release", 0, 16)])
            del f["labels"]
            f.create_dataset("labels", data=np.zeros(1, dtype=np.int64))
        elif images_kind == "virtual":
            with h5py.File(os.path.join(d, "source.h5"), "w") as s:
                s.create_dataset("images", data=images)
            layout = h5py.VirtualLayout(shape=images.shape, dtype=images.dtype)
            layout[...] = h5py.VirtualSource(os.path.join(d, "source.h5"), "images", shape=images.shape)
            f.create_virtual_dataset("images", layout)
        elif images_kind == "external link":
            with h5py.File(os.path.join(d, "source.h5"), "w") as s:
                s.create_dataset("images", data=images)
            f["images"] = h5py.ExternalLink("source.h5", "/images")
        elif images_kind == "soft link":
            f.create_dataset("pixels", data=images)
            f["images"] = h5py.SoftLink("/pixels")
    return path


def _model_tensor_external(d):
    """m.snn.h5 with one weight tensor moved, byte for byte, to external raw storage (the layer's digest
    still matches: only the storage rule can catch it)."""
    h5py, np = _h5py()
    path = os.path.join(d, "ext.snn.h5")
    shutil.copy(os.path.join(d, "m.snn.h5"), path)
    with h5py.File(path, "a") as f:
        for name in sorted(f["layers"]):
            g = f["layers"][name]
            if "weight" in g:
                w = g["weight"][()].astype(np.float32)
                attrs = dict(g["weight"].attrs)
                del g["weight"]
                raw = os.path.join(d, "weight.raw")
                w.tofile(raw)
                ds = g.create_dataset("weight", shape=w.shape, dtype=np.float32, external=[(raw, 0, w.nbytes)])
                for k, v in attrs.items():
                    ds.attrs[k] = v
                return path
    raise RuntimeError("m.snn.h5 has no weight tensor")


def _nir_param_external(d):
    """A small NIR graph (written by nir.write, the real tool) whose Affine weight is then moved, byte for
    byte, to external raw storage."""
    h5py, np = _h5py()
    import nir  # noqa: PLC0415
    shape = np.array([1, 28, 28])
    graph = nir.NIRGraph(
        nodes={"input": nir.Input(input_type=shape), "flat": nir.Flatten(start_dim=0, input_type={"input": shape}),
               "fc": nir.Affine(weight=np.ones((10, 784), np.float32), bias=np.zeros(10, np.float32)),
               "if": nir.IF(r=np.ones(10, np.float32), v_threshold=np.ones(10, np.float32)),
               "output": nir.Output(output_type=np.array([10]))},
        edges=[("input", "flat"), ("flat", "fc"), ("fc", "if"), ("if", "output")])
    nir.write(os.path.join(d, "m.nir"), graph)
    with h5py.File(os.path.join(d, "m.nir"), "a") as f:
        node = f["node"]["nodes"]["fc"]
        w = node["weight"][()]
        del node["weight"]
        raw = os.path.join(d, "nir-weight.raw")
        w.tofile(raw)
        node.create_dataset("weight", shape=w.shape, dtype=w.dtype, external=[(raw, 0, w.nbytes)])


def _declared_beyond_file(d):
    """d.h5 whose images dataset declares 2^31 images: a contiguous layout whose header claims the space
    (allocated early), the file then cut back to the bytes that were really written."""
    h5py, np = _h5py()
    path = os.path.join(d, "huge.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("labels", data=np.zeros(4, dtype=np.int64))
        f.create_dataset("images", data=np.zeros((4, 1, 28, 28), dtype=np.uint8))
    # The real images dataset is 3136 bytes; declaring more than the file needs no resize (its dataspace is
    # fixed), so the header is rewritten: the labels count becomes huge while the file stays tiny.
    data = bytearray(open(path, "rb").read())
    # Dataspace messages hold the dimension as 8 little-endian bytes: the labels' single dimension (4).
    needle = (4).to_bytes(8, "little") * 2  # dims and max dims of the labels' dataspace
    at = data.find(needle)
    if at < 0:
        raise RuntimeError("labels dataspace not found")
    data[at:at + 16] = ((1 << 31).to_bytes(8, "little")) * 2
    open(path, "wb").write(data)
    return path


def _checkpoint_with_external_link(d):
    """A would-be checkpoint whose parts group is an external link to another file: refused before any of
    its values is read (the storage walk runs before the format checks)."""
    h5py, np = _h5py()
    with h5py.File(os.path.join(d, "other.h5"), "w") as f:
        f.create_group("parts")
    with h5py.File(os.path.join(d, "ck.h5"), "w") as f:
        f.attrs["format"] = "snnc-sweep-checkpoint"
        f["parts"] = h5py.ExternalLink("other.h5", "/parts")


def cases(rc):
    cs = []
    sweep = lambda data: rc.sweep_args(data=data)  # noqa: E731
    for kind, words in (("external storage", r"external"), ("external storage of another file", r"external"),
                        ("virtual", r"virtual"), ("external link", r"external link"), ("soft link", r"soft link")):
        cs.append(rc.Case(f"sweep --data: an HDF5 dataset whose images are {kind}", sweep("trick.h5"),
                          setup=lambda d, kind=kind: _dataset_with(d, kind),
                          msg=[r"trick\.h5", r"images", words], needs={"h5py"}, group=GROUP))
    cs.append(rc.Case("sweep: a model whose weight is in external raw storage (its digest matches)",
                      rc.sweep_args()[:1] + ["ext.snn.h5"] + rc.sweep_args()[2:], setup=_model_tensor_external,
                      msg=[r"ext\.snn\.h5", r"weight", r"external"], needs={"h5py"}, group=GROUP))
    cs.append(rc.Case("info: a model whose weight is in external raw storage", ["info", "ext.snn.h5"],
                      setup=_model_tensor_external, msg=[r"ext\.snn\.h5", r"external"], needs={"h5py"}, group=GROUP))
    cs.append(rc.Case("import: a NIR graph whose weight is in external raw storage",
                      ["import", "m.nir", "-o", "x.snn.h5", "--quiet"], setup=_nir_param_external,
                      msg=[r"m\.nir", r"weight", r"external"], needs={"h5py"}, group=GROUP))
    cs.append(rc.Case("sweep --data: an HDF5 dataset whose labels declare 2^31 entries in a 10 kB file",
                      sweep("huge.h5"), setup=_declared_beyond_file, msg=[r"huge\.h5", r"labels"],
                      needs={"h5py"}, group=GROUP))
    cs.append(rc.Case("sweep --checkpoint: a checkpoint whose parts are an external link",
                      rc.sweep_args(["--checkpoint", "ck.h5"]), setup=_checkpoint_with_external_link,
                      msg=[r"checkpoint 'ck\.h5'", r"external link"], needs={"h5py"}, group=GROUP))
    return cs
