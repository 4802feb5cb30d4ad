"""benchmarks/host_load.py: a CPU ratio counts against a target only on a quiet host, and
benchmarks/cpu.py's target verdicts go through it."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import cpu  # noqa: E402
import host_load  # noqa: E402

QUIET = [(0.3, 0.6, 1.0), (0.8, 0.7, 1.0)]
LOADED = [(0.4, 0.6, 1.0), (1.37, 0.9, 1.1)]


def test_limit_is_half_a_load_per_core():
    assert host_load.limit(2) == 1.0
    assert host_load.limit(16) == 8.0


@pytest.mark.parametrize("ratio, want", [(0.97, "met"), (1.0, "met"), (2.62, "missed")])
def test_quiet_host_gives_met_or_missed(ratio, want):
    assert host_load.verdict(ratio, 1.0, QUIET, cores=2) == want


def test_loaded_host_does_not_count_a_ratio():
    assert host_load.verdict(0.5, 1.0, LOADED, cores=2) == "loaded host (load 1.37): ratio not counted"
    # the same samples count on a host with more cores
    assert host_load.verdict(0.5, 1.0, LOADED, cores=4) == "met"


def test_unknown_load_does_not_count_a_ratio():
    assert host_load.verdict(0.5, 1.0, [QUIET[0], None], cores=2) == "load not known: ratio not counted"
    assert host_load.verdict(0.5, 1.0, [], cores=2) == "load not known: ratio not counted"


def test_sample_reports_the_load_or_none(monkeypatch):
    s = host_load.sample()
    assert s is None or (len(s) == 3 and all(x >= 0 for x in s))

    def fail():
        raise OSError("no load average here")
    monkeypatch.setattr(os, "getloadavg", fail)
    assert host_load.sample() is None


def _row(problem, load):
    r = {k: {"median": m, "min": m * 0.9, "max": m * 1.1} for k, m in (
        ("polykern chunks / numpy", 0.9), ("polykern tuned / numpy", 3.0), ("polykern chunks / numba parallel", 1.2))}
    return {"problem": problem, "ratios": r, "loadavg": load}


def test_cpu_tuned_targets_use_the_best_contender_and_the_load_guard():
    quiet = {t["peer"]: t for t in cpu.target_verdicts(_row("sum", QUIET), cores=2)}
    assert quiet["numpy"]["contender"] == "polykern chunks" and quiet["numpy"]["verdict"] == "met"
    assert quiet["numba parallel"]["verdict"] == "missed"
    loaded = cpu.target_verdicts(_row("sum", LOADED), cores=2)
    assert {t["verdict"] for t in loaded} == {"loaded host (load 1.37): ratio not counted"}


def test_cpu_tuned_table_prints_the_load_and_the_verdicts():
    row = dict(_row("sum", LOADED), size=1 << 24, status={}, seconds={"polykern chunks": 0.004})
    row["targets"] = cpu.target_verdicts(row, cores=2)
    text = cpu.tuned_table({"rows": [row]})
    assert "load 0.40 -> 1.37" in text
    assert "loaded host (load 1.37): ratio not counted" in text
