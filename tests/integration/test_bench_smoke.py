"""Smoke test of the benchmark harness (``make bench``): 20 objects, stacksync only, on the simulator."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
