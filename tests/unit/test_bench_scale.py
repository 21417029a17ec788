"""tests/bench (issue 32): stacks split, scenario writes, medians, ratios to the limit, memory growth, profiles."""

import cProfile
import json
import shutil
import sys

import pytest

from tests.bench import cluster, limit, manifests, playprof, report, scenarios, tools


def test_split_stacks_puts_the_prerequisites_first_and_every_object_in_one_stack_directory():
    entries = manifests.split_stacks(manifests.generate(1000), 20)
    sizes = [sum(1 for e in entries if e.stack == i) for i in range(20)]
    assert sizes == [50] * 20
    assert all(e.path.startswith(manifests.stack_dir(e.stack) + "/") for e in entries)
    assert {e.kind for e in entries if e.namespace is None} <= {e.kind for e in entries if e.stack == 0}
    assert len(set(e.path for e in entries)) == 1000
    with pytest.raises(ValueError):
        manifests.split_stacks(manifests.generate(30), 31)


def test_state_with_stacks_keeps_the_mix_of_one_stack():
    one, many = scenarios.State(400), scenarios.State(400, stacks=8)
    assert [(e.kind, e.name) for e in one.entries] == [(e.kind, e.name) for e in many.entries]
    assert many.stacks == 8 and {e.stack for e in many.entries} == set(range(8)) and one.entries[0].stack is None


def test_writes_are_what_the_scenario_changed_or_removed():
    state = scenarios.State(200)
    first, deleted = scenarios.writes({}, state.entries)
    assert first == state.entries and deleted == []
    before = scenarios.snapshot(state.entries)
    assert scenarios.writes(before, state.entries) == ([], [])  # the no-op writes nothing
    scenarios.changed(state)
    applied, deleted = scenarios.writes(before, state.entries)
    assert len(applied) == state.changed and all(e.rev == 1 for e in applied) and deleted == []
    before = scenarios.snapshot(state.entries)
    scenarios.removed(state)
    applied, deleted = scenarios.writes(before, state.entries)
    assert applied == [] and len(deleted) == state.removed
    assert not set(e.path for e in deleted) & set(e.path for e in state.entries)


def test_limit_sends_the_prerequisites_first():
    objs = [e.manifest() for e in manifests.generate(100)]
    first, rest = limit.split(objs)
    assert {o["kind"] for o in first} == {"Namespace", "CustomResourceDefinition"}
    assert len(first) + len(rest) == 100 and "Namespace" not in {o["kind"] for o in rest}


def test_limit_tool_reports_startup_plus_writes_as_its_wall_time(tmp_path):
    ctx = tools.Context(tmp_path / "kubeconfig", tmp_path / "repo", tmp_path, tmp_path / "bin", [], 1)
    ctx.scenario, ctx.writes = "first", tmp_path / "writes.json"
    argv = tools.TOOLS["limit"].command(ctx)
    assert argv[1:3] == ["-m", "tests.bench.limit"] and str(ctx.writes) in argv
    (tmp_path / "limit-first.json").write_text(json.dumps(dict(seconds=3.5, startup_s=0.5, startup_cpu_s=0.45, writes_s=3.0)))
    rec = dict(ok=True, seconds=3.9)
    tools.TOOLS["limit"].finish(rec, ctx)
    assert rec["seconds"] == 3.5 and rec["command_seconds"] == 3.9 and rec["startup_s"] == 0.5


def test_check_scenario_runs_the_playbooks_in_check_mode_and_kubectl_as_a_dry_run(tmp_path):
    ctx = tools.Context(tmp_path / "kubeconfig", tmp_path / "repo", tmp_path, tmp_path / "bin", ["ConfigMap"], 1)
    assert "--check" not in tools.TOOLS["stacksync"].command(ctx)
    ctx.check = True
    assert "--check" in tools.TOOLS["stacksync"].command(ctx) and "--check" in tools.TOOLS["k8s-list"].command(ctx)
    assert "--dry-run=server" in tools.TOOLS["kubectl"].command(ctx)[-1]


def test_stacks_tool_gives_one_source_per_stack_directory(tmp_path):
    ctx = tools.Context(tmp_path / "kubeconfig", tmp_path / "repo", tmp_path, tmp_path / "bin", [], 1)
    ctx.stacks = 3
    argv = tools.TOOLS["stacksync-stacks"].command(ctx)
    extra = json.loads(argv[argv.index("-e") + 1])
    assert [s["path"] for s in extra["stacksync_sources"]] == ["stack-000", "stack-001", "stack-002"]
    assert len(set(s["stack"] for s in extra["stacksync_sources"])) == 3
    assert {s["repo"] for s in extra["stacksync_sources"]} == {f"file://{tmp_path / 'repo'}"}


def _rec(tool, scenario, seconds, cpu=1.0, size=1000, objects=None, round_=0, **extra):
    rec = dict(tool=tool, scenario=scenario, seconds=seconds, cpu_seconds=cpu, size=size, objects=objects or size, ok=True,
               round=round_, estimated=False, requests={"list": 12}, requests_total=14, rss_mb=100.0, pss_mb=80.0,
               max_proc_mb=70.0, load_avg=2.0, kinds=12, requests_by_resource={})
    rec.update(extra)
    return rec


def test_summary_takes_the_median_of_the_rounds_and_the_ratios_within_a_size():
    records = [_rec("stacksync", "noop", s, round_=i) for i, s in enumerate((1.4, 1.0, 1.2))]
    records += [_rec("limit", "noop", 0.5, cpu=0.4, startup_s=0.5, startup_cpu_s=0.4, round_=i) for i in range(3)]
    records += [_rec("limit", "first", 3.0, startup_s=0.6, startup_cpu_s=0.5), _rec("stacksync", "first", 3.3)]
    records += [_rec("kubectl", "first", 33.0), _rec("k8s-list", "noop", 12.0)]
    records += [_rec("stacksync", "noop", 9.0, size=10000)]  # another size: not in the 1,000 rows' medians
    rows = {(r["size"], r["tool"], r["scenario"]): r for r in report.summarize(records)}
    noop = rows[(1000, "stacksync", "noop")]
    assert noop["seconds"] == 1.2 and noop["seconds_range"] == (1.0, 1.4) and noop["rounds"] == 3
    # start-up: the median of the limit's rows of the size (0.5 s in the no-op, 0.6 s in the first sync)
    assert noop["limit_ratio"] == 2.4 and noop["above_startup_s"] == 0.65 and noop["cpu_above_startup_s"] == 0.55
    assert noop["above_startup_ms_per_object"] == 0.65 and noop["faster_than"] == {"k8s-list": 10.0}
    first = rows[(1000, "stacksync", "first")]
    assert first["limit_ratio"] == 1.1 and first["faster_than"] == {"kubectl": 10.0}
    assert rows[(10000, "stacksync", "noop")]["limit_ratio"] is None
    met = {t["target"]: t["met"] for t in report.limit_targets([r for r in rows.values() if r["size"] == 1000], 1000)}
    assert met == {"1,000 objects, noop stacksync: at most 1 s (quiet machine)": False,
                   "1,000 objects, noop stacksync: at most 0.15 ms per object above start-up": False,
                   "1,000 objects, first stacksync: within 1.2x the limit": True}


def test_a_failed_round_leaves_the_row_failed():
    rows = report.summarize([_rec("stacksync", "noop", 1.0), dict(_rec("stacksync", "noop", 5.0, round_=1), ok=False)])
    assert rows[0]["ok"] is False and rows[0]["rounds"] == 2 and rows[0]["seconds"] == 1.0


def test_memory_growth_per_object_between_the_sizes():
    rows = report.summarize([_rec("stacksync", "noop", 1.0, pss_mb=90.0, max_proc_mb=80.0),
                             _rec("stacksync", "noop", 2.0, size=10000, pss_mb=180.0, max_proc_mb=170.0)])
    (growth,) = report.memory_growth(rows)
    assert growth["small"] == 1000 and growth["big"] == 10000
    assert growth["pss_kb_per_object"] == round(90 * 1024 / 9000, 2) and growth["proc_kb_per_object"] == growth["pss_kb_per_object"]
    assert report.memory_growth(report.summarize([_rec("stacksync", "noop", 1.0)])) == []


def test_stack_overhead_is_the_difference_per_stack():
    rows = report.summarize([_rec("stacksync-stacks", "noop", 12.0, cpu=9.0, stacks=200, requests_total=2414),
                             _rec("stacksync-role", "noop", 2.0, cpu=1.0, requests_total=14)])
    (line,) = report.stack_overhead(rows)
    assert "50 ms, 40 ms CPU and 12.0 requests per stack" in line


def test_markdown_has_the_limit_and_memory_tables():
    records = [_rec("stacksync", "noop", 1.2), _rec("limit", "noop", 0.5, startup_s=0.5, startup_cpu_s=0.4),
               _rec("stacksync", "noop", 2.0, size=10000, pss_mb=160.0)]
    results = dict(cluster=dict(backend="simulator", latency_ms=5), scenarios=["noop"], tools=["stacksync", "limit"],
                   records=records, summary=report.summarize(records), targets=[], repeat=1)
    results["memory"] = report.memory_growth(results["summary"])
    text = report.markdown(results)
    assert "| noop | stacksync | 1000 | 1.20 | 2.40 | 0.70 | 0.700 | 1.00 | 0.60 |" in text
    assert "| stacksync | noop | 1000 → 10000 | 80 → 160 | 9.1 |" in text


def test_stack_records_are_the_many_stacks_ones_only():
    def item(kind, name, stack):
        return {"kind": kind, "metadata": {"name": name, "labels": {cluster.RECORD_LABEL: stack}}}

    items = [item("ConfigMap", "r1", "bench-007"), item("Lease", "l1", "bench-007"), item("Secret", "k1", "bench-199"),
             item("ConfigMap", "r2", "someone-else"), item("ConfigMap", "r3", "bench-1234"), item("Pod", "p", "bench-001")]
    assert cluster.stack_records(items) == ["configmap/r1", "lease.coordination.k8s.io/l1", "secret/k1"]


class _Counted:
    def __init__(self, counts):
        self._counts = counts

    def counts(self):
        return self._counts


def test_a_fleet_sums_requests_and_control_plane_cpu():
    fleet = cluster.Fleet([_Counted({"verbs": {"list": 2}, "resources": {"list a": 2}, "server_cpu_seconds": 1.25,
                                     "system_total": 3, "system": {"kcm list x": 3}}),
                           _Counted({"verbs": {"list": 1, "get": 1}, "resources": {"list a": 1}})])
    counts = fleet.counts()
    assert counts["verbs"] == {"get": 1, "list": 3} and counts["resources"] == {"list a": 3}
    assert counts["server_cpu_seconds"] == 1.25 and counts["system_total"] == 3
    assert "system" not in cluster.Fleet([_Counted({"verbs": {}, "resources": {}})]).counts()


def _work():
    return sum(i * i for i in range(20000))


def test_playprof_merges_profiles_and_names_the_collection_files_short(tmp_path):
    for name in ("main.prof", "worker-1.prof"):
        prof = cProfile.Profile()
        prof.runcall(_work)
        prof.dump_stats(str(tmp_path / name))
    rows = playprof.top(playprof.merged(tmp_path), 50, "cumtime")
    work = [r for r in rows if r[0].endswith("(_work)")]
    assert len(work) == 1 and work[0][1] == 2  # one row, the calls of both profiles
    assert playprof._name(("/x/ansible_collections/stacksync/k8s/plugins/module_utils/engine/plan.py", 3, "f")) == \
        "plugins/module_utils/engine/plan.py:3(f)"
    assert "| `" in playprof.markdown(rows[:2])


def test_the_report_says_what_decodes_the_servers_answers(tmp_path):
    here = tmp_path / "this"
    here.mkdir()
    (here / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # this Python, named as in a venv
    (here / "python").chmod(0o755)
    try:
        import orjson
    except ImportError:
        assert report.json_decoder(here) == "json"
    else:
        assert report.json_decoder(here) == "orjson " + orjson.__version__
    (tmp_path / "python").symlink_to(shutil.which("false"))  # a Python without orjson (its import fails)
    assert report.json_decoder(tmp_path) == "json"
    assert report.json_decoder(tmp_path / "missing") is None


def test_the_report_says_whether_the_collection_bytecode_is_written():
    assert report.bytecode_kept({}) == "written to __pycache__"
    assert report.bytecode_kept({"PYTHONDONTWRITEBYTECODE": "1"}) == "not written (PYTHONDONTWRITEBYTECODE)"
