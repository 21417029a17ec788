"""Run one command and measure it: wall and CPU seconds and peak memory of its whole process tree.

CPU seconds (user + system of the whole tree) depend much less on the machine's load than wall
seconds do.

``getrusage(RUSAGE_CHILDREN)`` only gives the largest single descendant ever waited for, so the
tree is sampled from /proc instead: peak of the summed RSS (an upper bound: pages shared by forked
Ansible workers are counted once per process), peak of the summed PSS (shared pages split between
the processes sharing them), and the largest single process.
"""

import os
import resource
import subprocess
import threading
import time
from pathlib import Path

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _stat(pid):
    """``(ppid, rss_kb)`` of a process, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[21]) * PAGE_KB


def _pss_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree(root):
    """``{pid: rss_kb}`` of ``root`` and its descendants (pids below the root's are not scanned)."""
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) >= root:
            st = _stat(int(name))
            if st is not None:
                stats[int(name)] = st
    members = {root} if root in stats else set()
    grew = True
    while grew:
        new = {pid for pid, (ppid, _rss) in stats.items() if ppid in members and pid not in members}
        members |= new
        grew = bool(new)
    return {pid: stats[pid][1] for pid in members}


class MemoryPeak:
    """Samples a process tree in a thread until stopped; peaks in MB."""

    def __init__(self, root, interval=0.2):
        self.root = root
        self.interval = interval
        self.rss_mb = self.pss_mb = self.max_proc_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self):
        members = tree(self.root)
        if not members:
            return
        self.rss_mb = max(self.rss_mb, sum(members.values()) / 1024)
        self.max_proc_mb = max(self.max_proc_mb, max(members.values()) / 1024)
        self.pss_mb = max(self.pss_mb, sum(_pss_kb(pid) for pid in members) / 1024)

    def stop(self):
        self._stop.set()
        self._thread.join()


class Run:
    """Outcome of one measured command."""

    def __init__(self, returncode, seconds, cpu, memory, log, load):
        self.cpu = cpu
        self.load = load
        self.returncode = returncode
        self.seconds = seconds
        self.rss_mb = round(memory.rss_mb, 1)
        self.pss_mb = round(memory.pss_mb, 1)
        self.max_proc_mb = round(memory.max_proc_mb, 1)
        self.log = log

    @property
    def ok(self):
        return self.returncode == 0

    def tail(self, lines=15):
        return "\n".join(Path(self.log).read_text(errors="replace").splitlines()[-lines:])


def run(argv, env, log, cwd=None, timeout=3600):
    """Run ``argv`` with output to the file ``log``; returns a :class:`Run`."""
    load = round(os.getloadavg()[0], 1)  # the machine is shared: say how busy it was
    before = _children_cpu()
    with open(log, "w") as out:
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        memory = MemoryPeak(proc.pid)
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            returncode = proc.wait()
        seconds = time.monotonic() - start
        memory.stop()
    return Run(returncode, round(seconds, 2), round(_children_cpu() - before, 2), memory, log, load)


def _children_cpu():
    """User + system CPU seconds of every descendant waited for so far (a run's tree, once it ended)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
