"""The autotuned kernel, its configurations and the cache helpers shared by test_autotune.py and
test_autotune_hooks.py (import the fixture ``cache_dir`` into a test module to use it)."""
import numpy as np
import pytest

import polykern as pk
from polykern import Buffer, f32, i32


@pk.kernel
def scaled_add(n: i32, a: f32, x: Buffer[f32, "readonly"], y: Buffer[f32], PER: pk.constexpr):
    base = pk.global_id(0) * PER
    for j in range(PER):
        if base + j < n:
            y[base + j] = y[base + j] + a * x[base + j]


CONFIGS = [{"block": 32, "PER": 1}, {"block": 64, "PER": 2}, {"block": 128, "PER": 4}]


def grid_for(n):
    return lambda cfg: ((n + cfg["block"] * cfg["PER"] - 1) // (cfg["block"] * cfg["PER"]),)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYKERN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("POLYKERN_AUTOTUNE", raising=False)
    return tmp_path / "autotune"


def cache_files(d):
    return sorted(p.name for p in d.glob("*.json")) if d.exists() else []


def run_checked(k, n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    want = y + np.float32(3.0) * x
    k(n, np.float32(3.0), x, y, grid=grid_for(n))
    np.testing.assert_array_equal(y, want)  # trial runs were undone: exactly one y += 3x
