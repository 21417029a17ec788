"""tests/bench/cluster.py: the control plane's CPU seconds read from /proc, a fresh control plane's start tried again."""

import os
import time

import pytest

from tests.bench import cluster


def _burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_process_cpu_seconds_counts_the_processes_cpu_and_skips_gone_ones():
    before = cluster.process_cpu_seconds([os.getpid()])
    _burn(0.2)
    after = cluster.process_cpu_seconds([os.getpid(), 2 ** 22 + 1])  # past pid_max's default: no such process
    assert 0.15 <= after - before <= 1.0
    assert cluster.process_cpu_seconds([]) == 0


def _scripts(tmp_path, fails):
    """Stand-ins for ``up`` (failing its first ``fails`` starts) and ``down``, logging their calls."""
    calls = tmp_path / "calls"
    (tmp_path / "up").write_text(f"""#!/bin/sh
echo up >> {calls}
n=$(grep -c up {calls})
[ "$n" -gt {fails} ] || {{ echo "bind: address already in use"; exit 1; }}
mkdir -p "$1" && echo started
""")
    (tmp_path / "down").write_text(f"#!/bin/sh\necho down \"$2\" >> {calls}\nrm -rf \"$1\"\n")
    for name in ("up", "down"):
        (tmp_path / name).chmod(0o755)
    (tmp_path / "lane").mkdir()
    return calls


def test_a_fresh_control_plane_that_failed_to_start_is_started_again_after_a_wipe(tmp_path):
    calls = _scripts(tmp_path, fails=2)
    fresh = cluster.FreshCluster(tmp_path / "up", tmp_path / "lane", {})
    assert fresh.__enter__() is fresh
    assert calls.read_text().split("\n")[:-1] == ["up", "down --wipe", "up", "down --wipe", "up"]
    log = (tmp_path / "lane" / "cluster-up.log").read_text()
    assert log.count("attempt") == 3 and log.count("address already in use") == 2 and "started" in log


def test_a_fresh_control_plane_that_never_starts_is_an_error_naming_its_log(tmp_path):
    calls = _scripts(tmp_path, fails=5)
    with pytest.raises(RuntimeError, match=r"failed 3 times; see .*cluster-up\.log"):
        cluster.FreshCluster(tmp_path / "up", tmp_path / "lane", {}).__enter__()
    assert calls.read_text().count("up\n") == 3
