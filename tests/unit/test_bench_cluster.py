"""tests/bench/cluster.py: the control plane's CPU seconds read from /proc."""

import os
import time

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
