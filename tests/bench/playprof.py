"""``python -m tests.bench.playprof OUTDIR -- ansible-playbook ARGS...``: cProfile of a whole playbook run.

``ansible-playbook`` runs every task in a forked worker process, where a profiler of the main
process sees nothing; this runs ansible-playbook's own ``main`` in this process with cProfile on,
and cProfile in each worker (``WorkerProcess._run``), and writes ``OUTDIR/main.prof`` and
``OUTDIR/worker-PID.prof``, and
one profile per thread a worker starts (the engine's request threads: ``OUTDIR/thread-PID-ID.prof``).
``python -m tests.bench.playprof --top N OUTDIR`` prints the merged
profile's top entries by own time and by cumulative time (the functions of the collection first).

The profiler slows Python down (about 1.5-2x here): read the shares, not the seconds.
"""

import argparse
import cProfile
import io
import os
import pstats
import sys
import threading
from pathlib import Path


def _profiled(fn, path):
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        return fn()
    finally:
        profiler.disable()
        profiler.dump_stats(path)


def _patch_threads(outdir):
    """Every thread started from now on (the engine's request pool) runs under a profiler of its own."""
    original = threading.Thread.run

    def run(self):
        return _profiled(lambda: original(self), str(Path(outdir) / f"thread-{os.getpid()}-{threading.get_ident()}.prof"))

    threading.Thread.run = run


def _patch_worker(outdir):
    from ansible.executor.process import worker

    original = worker.WorkerProcess._run

    def _run(self):
        _patch_threads(outdir)
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            return original(self)
        finally:
            profiler.disable()
            profiler.dump_stats(str(Path(outdir) / f"worker-{os.getpid()}.prof"))

    worker.WorkerProcess._run = _run


def run(outdir, argv):
    """Run ``ansible-playbook argv`` (argv without the program) profiled; its exit code."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    _patch_worker(outdir)
    from ansible.cli.playbook import PlaybookCLI

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        code = PlaybookCLI.cli_executor(["ansible-playbook", *argv])
    except SystemExit as e:
        code = e.code
    finally:
        profiler.disable()
        profiler.dump_stats(str(outdir / "main.prof"))
    return code or 0


def merged(outdir):
    """One ``pstats.Stats`` of every profile in ``outdir``."""
    # a worker that ansible-playbook stops before it returns (the last task's) leaves an empty file
    files = sorted(str(p) for p in Path(outdir).glob("*.prof") if p.stat().st_size)
    if not files:
        raise SystemExit(f"no profiles in {outdir}")
    return pstats.Stats(*files, stream=io.StringIO())


#: functions that wait (for the server, another thread, a child process) rather than compute
WAITS = ("time.sleep", "'acquire' of '_thread", "'get' of '_queue.SimpleQueue'", "'read' of '_ssl._SSLSocket'",
         "'do_handshake' of '_ssl", "select.poll", "posix.waitpid", "'poll' of 'select", "'select' of 'select")


def waits(func):
    """True for a function that waits (``WAITS``): its own time is not CPU."""
    return func[0] == "~" and any(w in func[2] for w in WAITS)


def top(stats, n=25, key="tottime", skip_waits=True):
    """``[(function, calls, own s, cumulative s)]``: the top ``n`` by ``key`` (``tottime`` or ``cumtime``), without
    the functions that wait (:data:`WAITS`) unless ``skip_waits`` is false."""
    index = 2 if key == "tottime" else 3
    items = [kv for kv in stats.stats.items() if not (skip_waits and waits(kv[0]))]
    rows = sorted(items, key=lambda kv: -kv[1][index])[:n]
    return [(_name(func), nc, round(tt, 3), round(ct, 3)) for func, (_cc, nc, tt, ct, _callers) in rows]


def _name(func):
    path, line, name = func
    if "ansible_collections/stacksync/k8s/" in path:
        path = path.split("ansible_collections/stacksync/k8s/", 1)[1]
    elif "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    return f"{path}:{line}({name})"


def markdown(rows):
    lines = ["| function | calls | own s | cumulative s |", "|---|---:|---:|---:|"]
    lines += [f"| `{f}` | {nc} | {tt:.3f} | {ct:.3f} |" for f, nc, tt, ct in rows]
    return "\n".join(lines)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        cut = argv.index("--")
        return run(argv[0], argv[cut + 2 if argv[cut + 1:cut + 2] and argv[cut + 1].endswith("ansible-playbook")
                                 else cut + 1:])
    parser = argparse.ArgumentParser(prog="python -m tests.bench.playprof", description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="", help="only functions whose file path contains this")
    args = parser.parse_args(argv)
    stats = merged(args.outdir)
    if args.match:
        stats.stats = {f: v for f, v in stats.stats.items() if args.match in f[0]}
    total = sum(v[2] for v in stats.stats.values())
    waited = sum(v[2] for f, v in stats.stats.items() if waits(f))
    print(f"total own time {total:.3f} s, of which waiting {waited:.3f} s (every process and thread)")
    print("\nby own time:\n" + markdown(top(stats, args.top, "tottime")))
    print("\nby cumulative time:\n" + markdown(top(stats, args.top, "cumtime")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
