"""The seed program prints TensorFlow's numbers (epoch costs within 1e-3, accuracy 0.873 +- 0.005)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TF_COSTS = [1.1843, 0.6654, 0.5529, 0.4987, 0.4656, 0.4426, 0.4256, 0.4122, 0.4014, 0.3924]


@pytest.fixture(scope="module")
def mnist_dir():
    d = os.environ.get("PYGRAD_MNIST_DIR")
    if not d:
        pytest.fail("set PYGRAD_MNIST_DIR to the directory holding the four MNIST .gz files")
    return d


@pytest.mark.parametrize("mode", [[], ["--manual"]], ids=["minimize", "manual"])
def test_mnist_softmax_matches_tensorflow(mnist_dir, mode):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "mnist_softmax.py"), mnist_dir, *mode],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    costs = [float(c) for c in re.findall(r"^Epoch: \d{4} cost= (\d+\.\d{9})$", out, re.M)]
    assert len(costs) == 10, out
    for epoch, (got, want) in enumerate(zip(costs, TF_COSTS), 1):
        assert abs(got - want) < 1e-3, f"epoch {epoch}: cost {got} vs TensorFlow's {want}"
    assert all(b < a for a, b in zip(costs, costs[1:])), "the loss must fall every epoch"
    accuracy = float(re.search(r"^Accuracy: ([\d.]+)$", out, re.M).group(1))
    assert abs(accuracy - 0.873) <= 0.005
