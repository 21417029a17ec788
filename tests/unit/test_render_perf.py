"""Rendering at the scale of the acceptance fixture: 2,000 manifests across 200 files.

Correctness only; the speed of this same fixture is measured by ``python -m tests.tools.render_bench``
(part of ``make bench``), not asserted by a timed test.
"""

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import render

from tests.tools.render_bench import write_repo

FILES = 200
DOCS_PER_FILE = 10


@pytest.mark.slow
def test_2000_manifests_in_200_files_render_completely_and_in_order(tmp_path):
    write_repo(tmp_path, FILES, DOCS_PER_FILE)
    manifests = render(str(tmp_path))
    assert len(manifests) == FILES * DOCS_PER_FILE
    names = [m["metadata"]["name"] for m in manifests]
    assert len(set(names)) == len(names)
    # Files in sorted path order (team-NN/svc-NNN), documents in file order.
    files = sorted(range(FILES), key=lambda f: (f % 20, f))
    expected = [f"app-{f}-{d}" for f in files for d in range(DOCS_PER_FILE)]
    assert names == expected
    assert all(m["kind"] == "Deployment" and m["metadata"]["namespace"].startswith("team-") for m in manifests)
    assert render(str(tmp_path)) == manifests
