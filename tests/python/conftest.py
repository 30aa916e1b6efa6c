"""Shared fixtures: the snnc CLI and a work directory (set by ctest), the examples' CNN, Fashion-MNIST."""
import os
import shutil

import pytest

FMNIST = "/usr/share/datasets/fashion-mnist"
MEAN, STD = [0.2860], [0.3530]  # examples/train_cnn.py's normalisation


def pytest_configure(config):
    config.addinivalue_line("markers", "fmnist: needs Debian's dataset-fashion-mnist")


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("SNNC_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("SNNC_CLI (the snnc executable) not given")
    return path


@pytest.fixture(scope="session")
def work():
    path = os.environ.get("SNNC_WORK") or os.path.join(os.getcwd(), "snnc-python-work")
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


@pytest.fixture(scope="session")
def repo():
    return os.environ.get("SNNC_REPO") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="session")
def fmnist():
    if not os.path.isdir(FMNIST):
        pytest.skip("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)")
    return FMNIST
