"""Smoke test of the benchmark harness (``make bench``): 20 objects, stacksync only, on the simulator."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench import manifests

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(bool(os.environ.get("STACKSYNC_TEST_KUBECONFIG")),
                                reason="the benchmark starts its own simulators")


def test_bench_runs_all_scenarios_for_stacksync(tmp_path):
    output = tmp_path / "results.json"
    venv = Path(sys.executable).parent.parent  # this venv's ansible-playbook
    proc = subprocess.run([sys.executable, "-m", "tests.bench", "--objects", "20", "--tools", "stacksync",
                           "--ansible-venv", str(venv), "--output", str(output), "--no-profile"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(output.read_text())
    records = {r["scenario"]: r for r in results["records"]}
    assert list(records) == ["first", "noop", "changed", "removed"]
    assert all(r["ok"] for r in records.values())
    assert records["first"]["requests"].get("apply", 0) >= 20
    noop = records["noop"]["requests"]
    assert not any(noop.get(verb) for verb in ("apply", "create", "update", "patch", "delete")), noop
    assert records["removed"]["removed"] > 0
    assert "| noop | stacksync | 20 |" in proc.stdout
    assert results["cluster"]["lanes"] == "interleaved"  # the simulator's default


def test_throughput_measures_every_client_on_the_simulator(tmp_path):
    output = tmp_path / "throughput.json"
    proc = subprocess.run([sys.executable, "-m", "tests.bench.throughput", "--objects", "40", "--inflight", "4",
                           "--output", str(output)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {r["client"]: r for r in json.loads(output.read_text())["medians"]}
    assert set(rows) == {"raw", "kubeclient", "engine"}
    for client in ("raw", "kubeclient"):  # every PATCH of the bulk created its object
        assert rows[client]["statuses"] == {"201": rows[client]["bulk_objects"]}, rows[client]
        assert rows[client]["bulk_objects"] == 40 - len(manifests.namespaces_for(40)) - 1  # namespaces, CRD first
    assert rows["engine"]["counts"]["created"] == 40 and rows["engine"]["requests"]["PATCH"] >= 40
    assert "| engine | 4 | 40 |" in proc.stdout


def test_one_lane_at_a_time_runs_each_tool_through_every_scenario_before_the_next(tmp_path):
    output = tmp_path / "results.json"
    venv = Path(sys.executable).parent.parent
    proc = subprocess.run([sys.executable, "-m", "tests.bench", "--objects", "10", "--tools", "stacksync,stacksync-query",
                           "--scenarios", "first,noop", "--lanes", "one-at-a-time", "--ansible-venv", str(venv),
                           "--output", str(output), "--no-profile"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(output.read_text())
    assert results["cluster"]["lanes"] == "one-at-a-time"
    assert [(r["tool"], r["scenario"]) for r in results["records"]] == [
        ("stacksync", "first"), ("stacksync", "noop"), ("stacksync-query", "first"), ("stacksync-query", "noop")]
    assert all(r["ok"] for r in results["records"])
