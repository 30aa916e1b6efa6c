"""snnc.load_dataset and snnc.load read only an HDF5 file's own bytes (issue 36): a crafted file whose
images are kept in another file (external raw storage pointing at /etc/os-release, a virtual dataset, an
external link) is refused with snnc.Error, never returned as pixels."""
import os

import numpy as np
import pytest

snnc = pytest.importorskip("snnc")
h5py = pytest.importorskip("h5py")


def write(path, build):
    with h5py.File(path, "w") as f:
        f.create_dataset("labels", data=np.zeros(1, dtype=np.int64))
        build(f)
    return path


@pytest.mark.parametrize("kind", ["external storage", "virtual", "external link"])
def test_load_dataset_refuses_values_kept_in_another_file(work, kind):
    secret = "/etc/os-release"
    if not os.path.exists(secret):
        pytest.skip("no /etc/os-release to point at")
    size = min(os.path.getsize(secret), 64)
    other = os.path.join(work, "other.h5")
    with h5py.File(other, "w") as f:
        f.create_dataset("images", data=np.ones((1, 1, 1, size), np.uint8))

    def build(f):
        if kind == "external storage":
            f.create_dataset("images", shape=(1, 1, 1, size), dtype=np.uint8, external=[(secret, 0, size)])
        elif kind == "virtual":
            layout = h5py.VirtualLayout(shape=(1, 1, 1, size), dtype=np.uint8)
            layout[...] = h5py.VirtualSource(other, "images", shape=(1, 1, 1, size))
            f.create_virtual_dataset("images", layout)
        else:
            f["images"] = h5py.ExternalLink(other, "/images")

    path = write(os.path.join(work, "crafted.h5"), build)
    with pytest.raises(snnc.Error, match=r"crafted\.h5.*(external|virtual)"):
        snnc.load_dataset(path)


def test_load_dataset_still_reads_a_plain_file_in_full(work):
    images = np.arange(2 * 1 * 3 * 3, dtype=np.uint8).reshape(2, 1, 3, 3)
    path = write(os.path.join(work, "plain.h5"), lambda f: f.create_dataset("images", data=images))
    with h5py.File(path, "a") as f:
        del f["labels"]
        f.create_dataset("labels", data=np.array([1, 0], dtype=np.int64))
    d = snnc.load_dataset(path)
    np.testing.assert_array_equal(np.asarray(d.images), images.astype(np.float32) / 255.0)
    np.testing.assert_array_equal(np.asarray(d.labels), [1, 0])
