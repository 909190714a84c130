"""Shared test setup: one torch thread (small MLPs, a 2-core machine), a `slow` marker.

The slow tests (end-to-end sweeps, the learning check) still run by default: the CI
command is plain ``pytest``. ``pytest -m "not slow"`` skips them for a quick pass.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

torch.set_num_threads(1)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: end-to-end runs and the learning check (run by default)")


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
    yield
