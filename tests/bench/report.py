"""Result records, the Markdown table, the ratios to stacksync and the targets of issue 7."""

import math
import os
import platform
import re
import subprocess
from pathlib import Path

from . import manifests

BASELINE = "stacksync"
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


def _ratios(records):
    base = {r["scenario"]: r for r in records if r["tool"] == BASELINE and r["ok"]}
    for r in records:
        b = base.get(r["scenario"])
        r["ratio"] = round(r["seconds"] / b["seconds"], 1) if b and r["ok"] and b["seconds"] else None


def _versions(bin_dir):
    def out(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            return None
    return dict(python=platform.python_version(), ansible_core=out([str(bin_dir / "ansible-playbook"), "--version"]),
                kubectl=out(["kubectl", "version", "--client"]), cpus=os.cpu_count())


def results(args, records, bin_dir, total_seconds):
    _ratios(records)
    cluster = args.backend.describe()
    cluster.update(clusters=args.clusters, forks=args.forks, lanes=args.lanes, settle_s=args.settle)
    return dict(objects=args.objects, cluster=cluster, latency_ms=cluster.get("latency_ms"), loop_sample=args.loop_sample,
                concurrency=args.concurrency, tools=args.tools, scenarios=args.scenarios, total_seconds=total_seconds, versions=_versions(bin_dir),
                records=records, targets=targets(records, args.objects, args.clusters))


def _verbs(requests):
    return ", ".join(f"{v} {n}" for v, n in sorted(requests.items(), key=lambda kv: -kv[1]))


def cluster_line(cluster):
    if cluster.get("clusters", 1) > 1:
        return (f"Clusters: a fleet of {cluster['clusters']} simulators per tool ({cluster['latency_ms']:g} ms added "
                f"latency), one inventory host each, {cluster['forks']} forks; objects and requests are per cluster "
                "and for the whole fleet.")
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


def markdown(results):
    lines = [cluster_line(results["cluster"]), "",
             "| scenario | tool | objects | wall s | x stacksync | CPU s | API requests | by verb | peak RSS tree MB | peak PSS MB "
             "| load |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    order = {s: i for i, s in enumerate(results["scenarios"])}

    def in_order(records):  # scenario by scenario, the tools in the order asked for
        return sorted(records, key=lambda r: (order[r["scenario"]], results["tools"].index(r["tool"])))

    for r in in_order(results["records"]):
        est = "~" if r["estimated"] else ""
        seconds = f"{est}{r['seconds']:.2f}" if r["ok"] else "failed"
        ratio = "" if r["ratio"] is None else f"{est}{r['ratio']:.1f}"
        cpu = f"{r['cpu_seconds']:.1f}" if not r["estimated"] else f"({r['cpu_seconds']:.1f})"
        lines.append(f"| {r['scenario']} | {r['tool']} | {r['objects']} | {seconds} | {ratio} | {cpu} | {est}{r['requests_total']} | "
                     f"{_verbs(r['requests'])} | {r['rss_mb']:.0f} | {r['pss_mb']:.0f} | {r['load_avg']:.1f} |")
    server = [r for r in results["records"] if "server_cpu_seconds" in r]
    if server:
        lines += ["", "Control plane CPU (etcd + kube-apiserver + kube-controller-manager) in each run's window, on the same "
                  "cores as the tool:", "", "| scenario | tool | wall s | tool CPU s | control plane CPU s | both, per wall s |",
                  "|---|---|---:|---:|---:|---:|"]
        for r in in_order(server):
            busy = (r["cpu_seconds"] + r["server_cpu_seconds"]) / r["seconds"] if r["seconds"] else 0
            lines.append(f"| {r['scenario']} | {r['tool']} | {r['seconds']:.2f} | {r['cpu_seconds']:.1f} | "
                         f"{r['server_cpu_seconds']:.1f} | {busy:.2f} |")
    fleet = [r for r in results["records"] if r.get("clusters", 1) > 1]
    if fleet:
        lines += ["", "| scenario | tool | clusters x objects | wall s | wall s per cluster | CPU s | CPU s per cluster "
                  "| API requests | peak RSS tree MB | load |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in in_order(fleet):
            k = r["clusters"]
            seconds = f"{r['seconds']:.2f} | {r['seconds'] / k:.2f}" if r["ok"] else "failed | "
            lines.append(f"| {r['scenario']} | {r['tool']} | {k} x {r['objects']} | {seconds} | {r['cpu_seconds']:.1f} "
                         f"| {r['cpu_seconds'] / k:.2f} | {r['requests_total']} | {r['rss_mb']:.0f} | {r['load_avg']:.1f} |")
    lines.append("")
    lines.append("Targets (issues 7 and 18):")
    for t in results["targets"]:
        lines.append(f"- {VERDICT[t['met']]} {t['target']}: {t['measured']}")
    return "\n".join(lines)


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
        rss = max(r["rss_mb"] for r in ours)
        out.append(dict(target="10,000 objects: peak memory of the whole process tree under 400 MB", met=rss < 400,
                        measured=f"{rss:.0f} MB summed RSS ({max(r['pss_mb'] for r in ours):.0f} MB PSS)"))
    elif objects >= 5000:
        ours = [r for r in records if r["tool"] == BASELINE]
        pss = max(r["pss_mb"] for r in ours)
        out.append(dict(target="5,000 objects: peak memory (PSS of the process tree) under 300 MB", met=pss < 300,
                        measured=f"{pss:.0f} MB PSS ({max(r['rss_mb'] for r in ours):.0f} MB summed RSS)"))
    return out
