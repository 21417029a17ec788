"""``python -m tests.bench.matrix RESULTS.json``: issue 18's matrix from a benchmark run's results.

One row per stacksync tool and scenario with its wall and CPU seconds, how many times faster it was
than kubernetes.core's list mode and ``kubectl apply --server-side`` in the same run (their wall
seconds divided by the row's), and for the ``@module`` rows the module process's time divided by
the median of the same form's rows that ran in the controller's process (every other way of
setting the interpreter: one row alone may have been slowed by the machine's load). Several results files (runs of the same tools) are
read as one: each ratio is taken within its own run.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

PEERS = ("k8s-list", "kubectl")


def _form(tool):
    """``stacksync-query@module`` -> ``stacksync-query``: the form the tool's controller-process row has."""
    return tool.split("@", 1)[0]


def rows(results):
    """The matrix rows of one run's results (see the module docstring)."""
    records = [r for r in results["records"] if r["ok"]]
    by = {(r["tool"], r["scenario"]): r for r in records}
    out = []
    for r in records:
        if not r["tool"].startswith("stacksync"):
            continue
        row = dict(tool=r["tool"], scenario=r["scenario"], seconds=r["seconds"], cpu=r["cpu_seconds"],
                   requests=r["requests_total"], rss_mb=r["rss_mb"], load=r.get("load_avg"))
        for peer in PEERS:
            p = by.get((peer, r["scenario"]))
            row[peer] = round(p["seconds"] / r["seconds"], 1) if p and r["seconds"] else None
        if r["tool"].endswith("@module"):
            base = [b for b in records if b["scenario"] == r["scenario"] and b["tool"].startswith("stacksync")
                    and _form(b["tool"]) == _form(r["tool"]) and not b["tool"].endswith("@module")]
            if base:
                row["module_ratio"] = round(r["seconds"] / statistics.median(b["seconds"] for b in base), 2)
                row["module_cpu_ratio"] = round(r["cpu_seconds"] / statistics.median(b["cpu_seconds"] for b in base), 2)
        out.append(row)
    return out


def _fmt(value, suffix=""):
    return "" if value is None else f"{value}{suffix}"


def markdown(all_rows):
    lines = ["| scenario | tool | wall s | CPU s | API requests | x faster than k8s-list | x faster than kubectl "
             "| module ÷ controller (wall / CPU) | load |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for r in sorted(all_rows, key=lambda r: (r["scenario"] != "first", r["scenario"])):
        module = f"{r['module_ratio']}x / {r['module_cpu_ratio']}x" if "module_ratio" in r else ""
        lines.append(f"| {r['scenario']} | {r['tool']} | {r['seconds']:.2f} | {r['cpu']:.1f} | {r['requests']} | "
                     f"{_fmt(r['k8s-list'], 'x')} | {_fmt(r['kubectl'], 'x')} | {module} | {_fmt(r['load'])} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.bench.matrix", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="results JSON of python -m tests.bench (--output)")
    args = parser.parse_args(argv)
    all_rows = []
    for path in args.results:
        all_rows.extend(rows(json.loads(path.read_text())))
    print(markdown(all_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
