"""``make demo`` end to end: ``bash examples/demo.sh COLLECTIONS_PATH`` (simulator, example git repo,
first sync, no-op, change with --check --diff then applied, removal -> prune)."""

import os
import subprocess

import pytest

try:
    from .test_sync_helpers import REPO_ROOT, clean_env
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import REPO_ROOT, clean_env

VENV_PYTHON = REPO_ROOT / ".venv" / "bin" / "python"


@pytest.mark.slow
@pytest.mark.skipif(not VENV_PYTHON.exists(), reason="examples/demo.sh runs with the repository's .venv (make venv)")
def test_demo_script_runs_end_to_end():
    proc = subprocess.run(["bash", str(REPO_ROOT / "examples" / "demo.sh"), os.environ["ANSIBLE_COLLECTIONS_PATH"]],
                          cwd=REPO_ROOT, capture_output=True, text=True, env=clean_env(), timeout=900)
    out = proc.stdout
    assert proc.returncode == 0, out[-6000:] + proc.stderr[-3000:]
    assert "created 6, configured 0, unchanged 0, pruned 0, skipped 0" in out
    assert "configured 2, unchanged 4, pruned 0" in out
    assert "OK: exactly one object was pruned: ConfigMap demo/feature-flags" in out
    assert "ConfigMaps left in namespace demo: app-config" in out
    # the simulator was stopped and the temp dir removed
    assert "Demo complete" in out
