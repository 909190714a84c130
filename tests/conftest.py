"""Shared test setup: one torch thread (small MLPs, a 2-core machine), a `slow` marker.

The slow tests (end-to-end sweeps, the learning check) still run by default: the CI
command is plain ``pytest``. ``pytest -m "not slow"`` skips them for a quick pass.
"""
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
# Warm starts (the LLM suite's SFT model and reward model) go to a cache of this session, set here,
# before any test starts a sweep: a sweep's worker processes come from a forkserver that keeps the
# environment it started with, so a variable set later by a fixture would not reach them.
_SESSION_CACHE = tempfile.mkdtemp(prefix="pg_arena_test_cache_")
os.environ["PG_ARENA_CACHE"] = _SESSION_CACHE

import pytest  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

torch.set_num_threads(1)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: end-to-end runs and the learning check (run by default)")


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
    yield
