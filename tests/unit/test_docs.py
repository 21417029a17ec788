"""Every module, plugin and role documents itself: `ansible-doc` renders each without warnings."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ANSIBLE_DOC = str(Path(sys.executable).parent / "ansible-doc")

PLUGINS = {
    "module": ["stacksync.k8s.checkout", "stacksync.k8s.sources", "stacksync.k8s.stack", "stacksync.k8s.stack_info",
               "stacksync.k8s.summary"],
    "lookup": ["stacksync.k8s.manifests"],
    "filter": ["stacksync.k8s.stack_name", "stacksync.k8s.redact_url"],
    "role": ["stacksync.k8s.source", "stacksync.k8s.sync"],
}


@pytest.mark.parametrize("plugin_type", sorted(PLUGINS))
def test_ansible_doc_renders_without_warnings(plugin_type):
    names = PLUGINS[plugin_type]
    proc = subprocess.run(
        [ANSIBLE_DOC, "-t", plugin_type, *names],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ANSIBLE_DEPRECATION_WARNINGS": "true"},
    )
    assert proc.returncode == 0, proc.stderr
    # ansible-core 2.21's `ansible-doc -t role` warns about its own internal collection
    # (ansible/_internal/.../_protomatter has no MANIFEST.json): not about anything of ours.
    stderr = "\n".join(line for line in proc.stderr.splitlines() if "ansible/_internal/ansible_collections" not in line)
    assert "WARNING" not in stderr, stderr
    assert "ERROR" not in stderr, stderr
    for name in names:
        assert name in proc.stdout
    if plugin_type != "role":
        assert "EXAMPLES:" in proc.stdout
        assert "RETURN VALUES:" in proc.stdout or "RETURN" in proc.stdout


def test_every_plugin_file_is_listed():
    """A new plugin must be added above (so its docs are checked)."""
    root = Path(__file__).resolve().parents[2] / "plugins"
    found = {
        "module": {f"stacksync.k8s.{p.stem}" for p in (root / "modules").glob("*.py") if p.stem != "__init__"},
        "lookup": {f"stacksync.k8s.{p.stem}" for p in (root / "lookup").glob("*.py") if p.stem != "__init__"},
    }
    for plugin_type, names in found.items():
        assert names == set(PLUGINS[plugin_type])
