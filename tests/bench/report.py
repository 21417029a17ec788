"""Result records, the Markdown table, the ratios to stacksync and the targets of issue 7."""

import math
import os
import platform
import re
import statistics
import subprocess
from pathlib import Path

from . import manifests

BASELINE = "stacksync"
PEERS = ("k8s-list", "kubectl")
# profile_tasks lines: "<task name> ---------- 12.34s"
TASK_TIME = re.compile(r"^(?P<task>.+?) -{3,} (?P<seconds>\d+(\.\d+)?)s\s*$")
LOOP_TASKS = ("one task per object",)
FIXED_VERBS = ("list", "watch")  # the prune step's k8s_info lists do not grow with the sample
VERDICT = {True: "MET", False: "NOT MET", None: "n/a"}


def task_seconds(log):
    """``{task: seconds}`` from the profile_tasks callback's summary at the end of an Ansible log."""
    tasks = {}
    for line in Path(log).read_text(errors="replace").splitlines():
        m = TASK_TIME.match(line.strip())
        if m:
            tasks[m.group("task")] = float(m.group("seconds"))
    return tasks


def _extrapolate(record, state, stride):
    """A sampled per-object loop, scaled to every object: loop time and per-object requests times W/k."""
    workload = sum(1 for e in state.entries if e.kind not in ("Namespace", "CustomResourceDefinition"))
    sample = math.ceil(workload / stride)
    factor = workload / sample
    looped = sum(t for name, t in record["tasks"].items() if any(loop in name for loop in LOOP_TASKS))
    record.update(estimated=True, sample_objects=sample, factor=round(factor, 3), measured_seconds=record["seconds"],
                  measured_requests=record["requests"], seconds=round(record["seconds"] + looped * (factor - 1), 2),
                  requests={verb: n if verb in FIXED_VERBS else round(n * factor) for verb, n in record["requests"].items()})


def record(tool, scenario, note, state, run, counts, ctx, commit):
    rec = dict(tool=tool.name, label=tool.label, scenario=scenario, note=note, objects=len(state.entries),
               kinds=len(manifests.kinds(state.entries)), commit=commit, ok=run.ok, seconds=run.seconds, cpu_seconds=run.cpu,
               requests=counts["verbs"], requests_by_resource=counts["resources"], rss_mb=run.rss_mb, pss_mb=run.pss_mb,
               max_proc_mb=run.max_proc_mb, changed=state.changed if scenario == "changed" else 0,
               removed=state.removed if scenario == "removed" else 0, pruning=ctx.peer_prune or tool.name.startswith("stacksync"),
               estimated=False, tasks=task_seconds(run.log), load_avg=run.load)
    if tool.sampled and ctx.loop_stride > 1 and run.ok:
        _extrapolate(rec, state, ctx.loop_stride)
    if "system" in counts:  # a real server: the control plane's own requests in the same window, not counted
        rec.update(system_requests=counts["system_total"], system_requests_by_resource=counts["system"])
    if counts.get("note"):
        rec["requests_note"] = counts["note"]
    if "server_cpu_seconds" in counts:
        rec["server_cpu_seconds"] = counts["server_cpu_seconds"]
    if not run.ok:
        rec["error"] = run.tail()
    rec["requests_total"] = sum(rec["requests"].values())
    return rec


def progress_line(rec):
    est = " (est)" if rec["estimated"] else ""
    status = "ok" if rec["ok"] else "FAILED"
    return (f"{rec['tool']:<15} {rec['scenario']:<8} {rec['objects']:5d} objects  {rec['seconds']:8.2f}s{est}  "
            f"{rec['requests_total']:6d} requests  {rec['rss_mb']:6.1f} MB RSS  {status}")


def _size(r):
    return r.get("size", r["objects"])


def summarize(records):
    """One row per (size, tool, scenario): the median of its rounds (``--repeat``), with their range."""
    groups = {}
    for r in records:
        groups.setdefault((_size(r), r["tool"], r["scenario"]), []).append(r)
    rows = []
    for (size, _tool, _scenario), group in groups.items():
        ok = [r for r in group if r["ok"]]
        row = dict(group[0], size=size, rounds=len(group), ok=bool(ok) and len(ok) == len(group))
        if ok:
            row.update(dict(ok[len(ok) // 2]))  # requests and tasks of a middle round
            row.update(size=size, rounds=len(group), ok=len(ok) == len(group))
            for key in ("seconds", "cpu_seconds", "requests_total", "rss_mb", "pss_mb", "max_proc_mb", "load_avg",
                        "server_cpu_seconds", "startup_s", "startup_cpu_s", "writes_s"):
                values = [r[key] for r in ok if r.get(key) is not None]
                if values:
                    row[key] = round(statistics.median(values), 3)
            row["seconds_range"] = (min(r["seconds"] for r in ok), max(r["seconds"] for r in ok))
            row["load_range"] = (min(r["load_avg"] for r in ok), max(r["load_avg"] for r in ok))
        rows.append(row)
    _ratios(rows)
    return rows


def _ratios(rows):
    """``ratio`` (x stacksync), ``limit_ratio`` (÷ the limit's wall), ``above_startup_s`` (wall minus the limit's
    start-up), ``cpu_above_startup_s`` and the peers' wall over the row's (``faster_than``), within a size."""
    by = {(r["size"], r["tool"], r["scenario"]): r for r in rows if r["ok"]}
    for r in rows:
        if not r["ok"]:
            r.update(ratio=None, limit_ratio=None, faster_than={})
            continue
        base = by.get((r["size"], BASELINE, r["scenario"]))
        r["ratio"] = round(r["seconds"] / base["seconds"], 1) if base and base["seconds"] else None
        limit = by.get((r["size"], "limit", r["scenario"]))
        r["limit_ratio"] = round(r["seconds"] / limit["seconds"], 2) if limit and limit["seconds"] else None
        startups = [x for x in rows if x["ok"] and x["size"] == r["size"] and x["tool"] == "limit"]
        if startups and r["tool"] != "limit":
            startup = statistics.median(x["startup_s"] for x in startups)
            startup_cpu = statistics.median(x["startup_cpu_s"] for x in startups)
            r["above_startup_s"] = round(r["seconds"] - startup, 3)
            r["cpu_above_startup_s"] = round(r["cpu_seconds"] - startup_cpu, 3)
            r["above_startup_ms_per_object"] = round(r["above_startup_s"] / r["objects"] * 1000, 3)
        r["faster_than"] = {}
        for peer in PEERS:
            p = by.get((r["size"], peer, r["scenario"]))
            if p and r["seconds"] and r["tool"] != peer:
                r["faster_than"][peer] = round(p["seconds"] / r["seconds"], 1)


def memory_growth(rows):
    """Per (tool, scenario) measured at several sizes: peak PSS of the tree and the largest process's RSS at the
    smallest and largest size, and their growth per object (KB) between them."""
    out = []
    keys = sorted(set((r["tool"], r["scenario"]) for r in rows if r["ok"]))
    for tool, scenario in keys:
        sized = sorted((r for r in rows if r["ok"] and r["tool"] == tool and r["scenario"] == scenario),
                       key=lambda r: r["objects"])
        if len(sized) < 2 or sized[0]["objects"] == sized[-1]["objects"]:
            continue
        small, big = sized[0], sized[-1]
        span = big["objects"] - small["objects"]
        out.append(dict(tool=tool, scenario=scenario, small=small["objects"], big=big["objects"],
                        pss=(small["pss_mb"], big["pss_mb"]), proc=(small["max_proc_mb"], big["max_proc_mb"]),
                        pss_kb_per_object=round((big["pss_mb"] - small["pss_mb"]) * 1024 / span, 2),
                        proc_kb_per_object=round((big["max_proc_mb"] - small["max_proc_mb"]) * 1024 / span, 2)))
    return out


def _versions(bin_dir):
    def out(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            return None
    return dict(python=platform.python_version(), ansible_core=out([str(bin_dir / "ansible-playbook"), "--version"]),
                kubectl=out(["kubectl", "version", "--client"]), cpus=os.cpu_count(), bytecode=bytecode_kept(os.environ),
                json_decoder=json_decoder(bin_dir))


def json_decoder(bin_dir):
    """What decodes the API server's answers in the tools' Python (``bin_dir/python``; module_utils/base/jsonload.py):
    ``orjson <version>`` when it is installed there, else ``json``."""
    try:
        found = subprocess.run([str(bin_dir / "python"), "-c", "import orjson; print(orjson.__version__)"],
                               capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return "orjson " + found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else "json"


def bytecode_kept(env):
    """Whether the tools' Python writes bytecode (the collection's code, plugin_utils/bytecode.py: compiled in every
    run where it is not written, unless it was compiled ahead)."""
    return "not written (PYTHONDONTWRITEBYTECODE)" if env.get("PYTHONDONTWRITEBYTECODE") else "written to __pycache__"


def results(args, records, bin_dir, total_seconds):
    cluster = args.backend.describe()
    cluster.update(clusters=args.clusters, forks=args.forks, lanes=args.lanes, settle_s=args.settle,
                   real_clusters=getattr(args, "real_clusters", 0))
    rows = summarize(records)
    for r in records:  # x stacksync of each run, as before issue 32 (the rows give the medians')
        r.setdefault("ratio", next((x["ratio"] for x in rows if (x["size"], x["tool"], x["scenario"]) ==
                                    (_size(r), r["tool"], r["scenario"])), None))
    sizes = getattr(args, "sizes", [args.objects])
    return dict(objects=args.objects, sizes=sizes, repeat=getattr(args, "repeat", 1), stacks=getattr(args, "stacks", 1),
                cluster=cluster, latency_ms=cluster.get("latency_ms"), loop_sample=args.loop_sample,
                concurrency=args.concurrency, tools=args.tools, scenarios=args.scenarios, total_seconds=total_seconds,
                versions=_versions(bin_dir), records=records, summary=rows, memory=memory_growth(rows),
                targets=[t for n in sizes for t in targets([r for r in rows if r["size"] == n], n, args.clusters)])


def _verbs(requests):
    return ", ".join(f"{v} {n}" for v, n in sorted(requests.items(), key=lambda kv: -kv[1]))


def cluster_line(cluster):
    if cluster.get("clusters", 1) > 1:
        real = cluster.get("real_clusters") or 0
        what = (f"{cluster['clusters']} fresh real control planes" if cluster["backend"] == "real" else
                f"{cluster['clusters']} clusters ({real} fresh real control planes, {cluster['clusters'] - real} simulators, "
                f"{cluster['latency_ms']:g} ms added latency)" if real else
                f"{cluster['clusters']} simulators ({cluster['latency_ms']:g} ms added latency)")
        return (f"Clusters: a fleet of {what} per tool, one inventory host each, {cluster['forks']} forks; objects are "
                "per cluster, requests for the whole fleet.")
    if cluster["backend"] == "simulator":
        return f"Cluster: a simulator per tool, {cluster['latency_ms']:g} ms added latency; requests counted by the simulator."
    if cluster["backend"] == "real":
        where = "a fresh kube-apiserver + kube-controller-manager per tool, " + (
            "each started, settled, used and stopped before the next tool's" if cluster.get("lanes") == "one-at-a-time"
            else "all up together, the tools in turn scenario by scenario")
    else:
        where = f"the existing cluster of {cluster['kubeconfig']}, tool after tool"
    return (f"Cluster: {where} ({cluster.get('server_version') or 'version unknown'}); requests counted from "
            "apiserver_request_total, control-plane clients (system_client label) left out; "
            f"not in that metric, so not counted: {cluster['not_counted']}.")


def _range(r):
    if r.get("rounds", 1) < 2 or not r["ok"]:
        return ""
    lo, hi = r["seconds_range"]
    return f"{lo:.2f}-{hi:.2f}"


def _load(r):
    if r.get("rounds", 1) < 2 or not r["ok"]:
        return f"{r['load_avg']:.1f}"
    lo, hi = r["load_range"]
    return f"{lo:.1f}-{hi:.1f}"


def _main_table(rows):
    lines = ["| scenario | tool | objects | wall s | rounds: range | ÷ limit | x stacksync | CPU s | API requests | by verb "
             "| peak PSS MB | largest process RSS MB | peak RSS tree MB | load |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        est = "~" if r["estimated"] else ""
        seconds = f"{est}{r['seconds']:.2f}" if r["ok"] else "failed"
        ratio = "" if r["ratio"] is None else f"{est}{r['ratio']:.1f}"
        limit = "" if r.get("limit_ratio") is None else f"{r['limit_ratio']:.2f}"
        cpu = f"{r['cpu_seconds']:.1f}" if not r["estimated"] else f"({r['cpu_seconds']:.1f})"
        lines.append(f"| {r['scenario']} | {r['tool']} | {r['objects']} | {seconds} | {_range(r)} | {limit} | {ratio} | {cpu} "
                     f"| {est}{r['requests_total']:.0f} | {_verbs(r['requests'])} | {r['pss_mb']:.0f} | {r['max_proc_mb']:.0f} "
                     f"| {r['rss_mb']:.0f} | {_load(r)} |")
    return lines


def _limit_table(rows):
    """Issue 32's figures: each stacksync row against the limit (start-up + bare writes) and the peers."""
    ours = [r for r in rows if r["ok"] and r["tool"].startswith("stacksync") and "above_startup_s" in r]
    if not ours:
        return []
    lines = ["", "Against the limit (the `limit` row: ansible-playbook start-up + the scenario's writes as bare server-side "
             "apply PATCHes, 16 in flight) and the peers, same run:", "",
             "| scenario | tool | objects | wall s | ÷ limit | above start-up s | per object ms | CPU s | CPU above start-up s "
             "| x faster than k8s-list | x faster than kubectl | load |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in ours:
        peers = [f"{r['faster_than'][p]:.1f}x" if p in r["faster_than"] else "" for p in PEERS]
        limit = "" if r.get("limit_ratio") is None else f"{r['limit_ratio']:.2f}"
        lines.append(f"| {r['scenario']} | {r['tool']} | {r['objects']} | {r['seconds']:.2f} | {limit} | {r['above_startup_s']:.2f} "
                     f"| {r['above_startup_ms_per_object']:.3f} | {r['cpu_seconds']:.2f} | {r['cpu_above_startup_s']:.2f} "
                     f"| {peers[0]} | {peers[1]} | {_load(r)} |")
    return lines


def _memory_table(growth):
    if not growth:
        return []
    lines = ["", "Memory between the sizes (peak PSS summed over the run's processes, shared pages counted once; the largest "
             "single process's peak RSS):", "",
             "| tool | scenario | objects | peak PSS MB | PSS growth KB per object | largest process MB | its growth KB per object |",
             "|---|---|---|---|---:|---|---:|"]
    for g in growth:
        lines.append(f"| {g['tool']} | {g['scenario']} | {g['small']} → {g['big']} | {g['pss'][0]:.0f} → {g['pss'][1]:.0f} "
                     f"| {g['pss_kb_per_object']:.1f} | {g['proc'][0]:.0f} → {g['proc'][1]:.0f} | {g['proc_kb_per_object']:.1f} |")
    return lines


def markdown(results):
    order = {s: i for i, s in enumerate(results["scenarios"])}

    def in_order(records):  # size by size, scenario by scenario, the tools in the order asked for
        return sorted(records, key=lambda r: (_size(r), order[r["scenario"]], results["tools"].index(r["tool"]),
                                              r.get("round", 0)))

    rows = in_order(results.get("summary") or summarize(results["records"]))
    lines = [cluster_line(results["cluster"]), ""]
    if results.get("repeat", 1) > 1:
        lines += [f"Medians of {results['repeat']} rounds (each on fresh clusters); the range of the rounds beside them.", ""]
    lines += _main_table(rows)
    lines += _limit_table(rows)
    lines += _memory_table(results.get("memory") or [])
    server = [r for r in in_order(results["records"]) if "server_cpu_seconds" in r]
    if server:
        lines += ["", "Control plane CPU (etcd + kube-apiserver + kube-controller-manager) in each run's window, on the same "
                  "cores as the tool:", "", "| scenario | tool | objects | round | wall s | tool CPU s | control plane CPU s "
                  "| both, per wall s |", "|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in server:
            busy = (r["cpu_seconds"] + r["server_cpu_seconds"]) / r["seconds"] if r["seconds"] else 0
            lines.append(f"| {r['scenario']} | {r['tool']} | {r['objects']} | {r.get('round', 0)} | {r['seconds']:.2f} "
                         f"| {r['cpu_seconds']:.1f} | {r['server_cpu_seconds']:.1f} | {busy:.2f} |")
    fleet = [r for r in rows if r.get("clusters", 1) > 1]
    if fleet:
        lines += ["", "| scenario | tool | clusters x objects | wall s | wall s per cluster | CPU s | CPU s per cluster "
                  "| API requests | peak PSS MB | load |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in fleet:
            k = r["clusters"]
            seconds = f"{r['seconds']:.2f} | {r['seconds'] / k:.2f}" if r["ok"] else "failed | "
            lines.append(f"| {r['scenario']} | {r['tool']} | {k} x {r['objects']} | {seconds} | {r['cpu_seconds']:.1f} "
                         f"| {r['cpu_seconds'] / k:.2f} | {r['requests_total']:.0f} | {r['pss_mb']:.0f} | {_load(r)} |")
    stacked = [r for r in rows if r.get("stacks", 1) > 1 and r["ok"]]
    if stacked:
        lines += ["", f"Many stacks (the repository in {stacked[0]['stacks']} stack directories):"]
        lines += [f"- {line}" for line in stack_overhead(stacked + [r for r in rows if r["tool"] == "stacksync-role"])]
    lines.append("")
    lines.append("Targets (issues 7, 18 and 32):")
    for t in results["targets"]:
        lines.append(f"- {VERDICT[t['met']]} {t['target']}: {t['measured']}")
    return "\n".join(lines)


def stack_overhead(rows):
    """Lines comparing ``stacksync-stacks`` (a source per stack) with ``stacksync-role`` (one source, the same
    objects): the difference per stack, in wall and CPU seconds, and in requests."""
    out = []
    for r in rows:
        if r["tool"] != "stacksync-stacks" or not r["ok"]:
            continue
        one = next((x for x in rows if x["tool"] == "stacksync-role" and x["ok"] and x["scenario"] == r["scenario"]
                    and _size(x) == _size(r)), None)
        if one is None:
            continue
        k = r["stacks"]
        out.append(f"{r['scenario']}, {r['objects']} objects: {k} stacks {r['seconds']:.2f} s ({r['cpu_seconds']:.1f} s CPU, "
                   f"{r['requests_total']:.0f} requests) against one stack {one['seconds']:.2f} s ({one['cpu_seconds']:.1f} s "
                   f"CPU, {one['requests_total']:.0f} requests): {(r['seconds'] - one['seconds']) / k * 1000:.0f} ms, "
                   f"{(r['cpu_seconds'] - one['cpu_seconds']) / k * 1000:.0f} ms CPU and "
                   f"{(r['requests_total'] - one['requests_total']) / k:.1f} requests per stack")
    return out


def _get(records, tool, scenario):
    return next((r for r in records if r["tool"] == tool and r["scenario"] == scenario and r["ok"]), None)


def _ratio_target(records, scenario, peer, factor):
    r = _get(records, peer, scenario)
    text = f"{scenario} {peer} ≥ {factor:g}x slower than stacksync"
    if r is None or r["ratio"] is None:
        return dict(target=text, met=None, measured="not measured")
    return dict(target=text, met=r["ratio"] >= factor, measured=f"{r['ratio']:.1f}x{' (estimated)' if r['estimated'] else ''}")


def targets(records, objects, clusters=1):
    out = [_ratio_target(records, "first", "k8s-list", 3), _ratio_target(records, "first", "kubectl", 8),
           _ratio_target(records, "first", "k8s-loop", 20), _ratio_target(records, "noop", "k8s-list", 5)]
    if clusters > 1:  # the single-cluster targets below do not apply to a fleet's totals
        return out
    noop = _get(records, BASELINE, "noop")
    if noop is not None:
        limit = noop["kinds"] + 10
        out.append(dict(target=f"noop: at most kinds + 10 = {limit} API requests", met=noop["requests_total"] <= limit,
                        measured=f"{noop['requests_total']} ({_verbs(noop['requests'])})"))
        out.append(dict(target="noop: whole ansible-playbook run under 3 s", met=noop["seconds"] < 3,
                        measured=f"{noop['seconds']:.2f} s"))
    pruned = _get(records, BASELINE, "removed")
    if pruned is not None:
        deletes = sum(n for key, n in pruned["requests_by_resource"].items() if key.startswith("delete ") and "leases" not in key)
        out.append(dict(target=f"removed: one DELETE per removed object ({pruned['removed']}; the lock's Lease not counted)",
                        met=deletes == pruned["removed"], measured=f"{deletes} DELETE, {pruned['requests'].get('list', 0)} LIST"))
    for form in ("stacksync", "stacksync-query"):
        for scenario in ("first", "noop"):
            inproc, module = _get(records, form, scenario), _get(records, form + "@module", scenario)
            if inproc and module:
                ratio = module["seconds"] / inproc["seconds"]
                out.append(dict(target=f"{scenario} {form}: a module process at most 1.3x the controller's process",
                                met=ratio <= 1.3, measured=f"{ratio:.2f}x ({module['seconds']:.2f} s / "
                                f"{inproc['seconds']:.2f} s; CPU {module['cpu_seconds']:.1f} / {inproc['cpu_seconds']:.1f} s)"))
    if objects >= 10000:
        ours = [r for r in records if r["tool"] == BASELINE]
        if noop is not None:
            out.append(dict(target="10,000 objects: no-op under 3 s", met=noop["seconds"] < 3, measured=f"{noop['seconds']:.2f} s"))
        first = _get(records, BASELINE, "first")
        if first is not None:
            out.append(dict(target="10,000 objects: first sync per object (compare with a 1,000-object run)", met=None,
                            measured=f"{first['seconds'] / first['objects'] * 1000:.2f} ms per object"))
        if ours:
            pss = max(r["pss_mb"] for r in ours)
            out.append(dict(target="10,000 objects: peak memory (PSS summed over the run's processes) under 400 MB",
                            met=pss < 400, measured=f"{pss:.0f} MB PSS ({max(r['max_proc_mb'] for r in ours):.0f} MB the "
                            f"largest process, {max(r['rss_mb'] for r in ours):.0f} MB summed RSS)"))
    elif objects >= 5000:
        ours = [r for r in records if r["tool"] == BASELINE]
        if ours:
            pss = max(r["pss_mb"] for r in ours)
            out.append(dict(target="5,000 objects: peak memory (PSS of the process tree) under 300 MB", met=pss < 300,
                            measured=f"{pss:.0f} MB PSS ({max(r['rss_mb'] for r in ours):.0f} MB summed RSS)"))
    return out + limit_targets(records, objects)


#: issue 32: the no-op's wall time at these sizes (quiet machine), its time above start-up per object, first ÷ limit
NOOP_SECONDS = {1000: 1.0, 10000: 2.0}
ABOVE_STARTUP_MS = 0.15
FIRST_LIMIT_RATIO = 1.2


def limit_targets(rows, objects):
    """Issue 32's targets for the stacksync rows of one size (``summarize`` rows, with the limit's ratios)."""
    out = []
    for r in rows:
        if not (r["ok"] and r["tool"].startswith("stacksync")):
            continue
        name = f"{objects:,} objects, {r['scenario']} {r['tool']}"
        if r["scenario"] == "noop" and objects in NOOP_SECONDS:
            out.append(dict(target=f"{name}: at most {NOOP_SECONDS[objects]:g} s (quiet machine)",
                            met=r["seconds"] <= NOOP_SECONDS[objects],
                            measured=f"{r['seconds']:.2f} s ({r['cpu_seconds']:.2f} s CPU, load {_load(r)})"))
        if r["scenario"] == "noop" and "above_startup_ms_per_object" in r:
            out.append(dict(target=f"{name}: at most {ABOVE_STARTUP_MS} ms per object above start-up",
                            met=r["above_startup_ms_per_object"] <= ABOVE_STARTUP_MS,
                            measured=f"{r['above_startup_ms_per_object']:.3f} ms ({r['above_startup_s']:.2f} s; CPU "
                            f"{r['cpu_above_startup_s']:.2f} s above start-up's)"))
        if r["scenario"] == "first" and r.get("limit_ratio") is not None:
            out.append(dict(target=f"{name}: within {FIRST_LIMIT_RATIO}x the limit", met=r["limit_ratio"] <= FIRST_LIMIT_RATIO,
                            measured=f"{r['limit_ratio']:.2f}x ({r['seconds']:.2f} s)"))
    return out
