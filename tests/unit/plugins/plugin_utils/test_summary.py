"""plugin_utils/summary.py: the lines a sync prints, its summary table, the task's message and the stats."""

from ansible_collections.stacksync.k8s.plugins.plugin_utils import sources as sp
from ansible_collections.stacksync.k8s.plugins.plugin_utils import summary as report

COMMIT = "0123456789abcdef0123456789abcdef01234567"
SOURCE = sp.resolve([{"repo": "https://t:x@h.example/r.git", "stack": "apps"}],
                    {"version": "main", "path": "manifests", "prune": True})[0]


def cm(name, **extra):
    return dict({"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": name}, **extra)


# -- messages -----------------------------------------------------------------------------------------
def test_one_line_joins_the_lines_of_a_message_and_cuts_a_long_one():
    assert report.one_line("fatal: not a repo\n\nPlease make sure\n  it exists.") == \
        "fatal: not a repo Please make sure it exists."
    long = report.one_line("x" * 500)
    assert len(long) == report.ONE_LINE and long.endswith(" ...")
    assert report.one_line(None) == ""


def test_a_message_of_a_stack_does_not_name_the_stack_again():
    assert report.own_words("web", "cannot sync stack 'web': Deployment web/x: bad") == "Deployment web/x: bad"
    assert report.own_words("web", "stack 'web': the Lease is not held") == "the Lease is not held"
    assert report.own_words("web", "refusing to prune stack 'web' to an empty set") == \
        "refusing to prune the stack to an empty set"
    # another stack's name, or a name that only starts like it, stays
    assert report.own_words("web", "Service x belonged to stack 'web-old'; stack 'web' takes it over") == \
        "Service x belonged to stack 'web-old'; the stack takes it over"
    assert report.own_words("web", "stack 'webapp' is locked") == "stack 'webapp' is locked"
    # "<source> (stack 'web')" says which source is which, and stays
    assert report.own_words("web", "declared by a (stack 'x') and b (stack 'web')") == \
        "declared by a (stack 'x') and b (stack 'web')"


def test_the_task_message_names_each_failed_stack_once_blocked_ones_last():
    blocked = sp.stack_entry(dict(SOURCE, stack="apps"), COMMIT, 2, None, None, blocked=["infra"])
    failed = sp.stack_entry(dict(SOURCE, stack="infra"), COMMIT, 1,
                            {"failed": True, "msg": "cannot sync stack 'infra': bad manifest", "counts": {}}, None)
    ok = sp.stack_entry(dict(SOURCE, stack="other"), COMMIT, 1, {"counts": {}}, {"counts": {}})
    assert report.failure_message([blocked, ok, failed]) == \
        "stack infra: bad manifest; stack apps: not applied: it depends on infra, which failed"


# -- the lines printed as the stacks run --------------------------------------------------------------
def test_the_end_line_counts_what_happened_and_only_that():
    res = {"counts": {"created": 2, "configured": 0, "unchanged": 4, "pruned": 1}, "skipped_objects": [cm("x")]}
    assert report.outcome_line("apps", res, 1.25, "apply") == "created 2, unchanged 4, skipped 1 in 1.2 s"
    assert report.outcome_line("apps", res, 1.25, "all") == "created 2, unchanged 4, pruned 1, skipped 1 in 1.2 s"
    assert report.outcome_line("apps", {"counts": {}}, 0.0, "apply") == "nothing to change in 0.0 s"
    assert report.outcome_line("apps", res, 0.5, "all", check_mode=True) == \
        "would create 2, leave 4 unchanged, prune 1, skip 1 (0.5 s)"


def test_the_end_line_tells_the_wait_for_another_runs_lock_apart():
    res = {"counts": {"configured": 522, "unchanged": 79}, "lock_wait": 58.3}
    assert report.outcome_line("big", res, 1.2, "apply") == \
        "configured 522, unchanged 79 in 1.2 s, after waiting 58 s for another run's lock"
    assert report.outcome_line("big", dict(res, lock_wait=0.1), 1.2, "apply") == "configured 522, unchanged 79 in 1.2 s"
    e = sp.stack_entry(SOURCE, COMMIT, 601, res, {"counts": {"pruned": 0}}, seconds=1.2, lock_wait=58.3)
    assert (e["seconds"], e["lock_wait"]) == (1.2, 58.3)


def test_a_prune_run_that_deleted_nothing_prints_nothing():
    assert report.outcome_line("apps", {"counts": {"pruned": 0}}, 0.1, "prune") is None
    assert report.outcome_line("apps", {"counts": {"pruned": 3}}, 0.1, "prune") == "pruned 3 objects in 0.1 s"
    assert report.outcome_line("apps", {"counts": {"pruned": 1}}, 0.1, "prune") == "pruned 1 object in 0.1 s"
    assert report.outcome_line("old", {"counts": {"pruned": 0}}, 0.1, "delete") == "deleted 0 objects in 0.1 s"


def test_a_failed_run_says_its_error_in_one_line():
    res = {"failed": True, "msg": "cannot sync stack 'apps': a\nb"}
    assert report.outcome_line("apps", res, 0.04, "apply") == "FAILED after 0.0 s: a b"


def test_the_start_line_says_what_is_being_written():
    origin = "https://h.example/r.git infra @ 0123456789ab"
    assert report.start_line("applied", 1, 3, 40, origin, False) == \
        "applying 3 of 40 objects from https://h.example/r.git infra @ 0123456789ab"
    assert report.start_line("applied", 1, 3, 40, origin, True).endswith(", then waiting until the stack is healthy")
    assert report.start_line("dry-run applied", 1, 3, 40, origin, False).startswith("checking 3 of 40 objects from ")
    assert report.start_line("pruned", 1, 2, 40, origin, False) == "pruning 2 objects"
    assert report.start_line("applied", 1, 1, 1, origin, False).startswith("applying 1 object from ")
    assert report.start_line("applied", 1, 6, 6, origin, False).startswith("applying 6 objects from ")
    assert report.start_line("ready", 1, 2, 40, origin, False) is None


# -- the summary --------------------------------------------------------------------------------------
def test_a_recreated_object_is_counted_listed_and_shown_in_a_column_of_its_own():
    res = {"counts": {"created": 0, "configured": 1, "recreated": 1, "unchanged": 4}}
    assert report.outcome_line("apps", res, 1.25, "apply") == "configured 1, recreated 1, unchanged 4 in 1.2 s"
    assert report.outcome_line("apps", res, 0.5, "apply", check_mode=True) == \
        "would configure 1, recreate 1, leave 4 unchanged (0.5 s)"
    why = "immutable field(s) spec.selector changed (the server said: field is immutable)"
    applied = [cm("a", action="configured"), dict(cm("web"), kind="Deployment", action="recreated", reason=why)]
    e = sp.stack_entry(SOURCE, COMMIT, 6, dict(res, applied=applied), {"counts": {"pruned": 0}}, seconds=2.0)
    assert e["counts"]["recreated"] == 1
    lines = report.summary_lines("c1", [e])
    assert lines[1].split() == [c.upper() for c in report.COLUMNS[:4]] + ["RECREATED"] + [
        c.upper() for c in report.COLUMNS[4:]]
    assert lines[2].split()[:7] == ["apps", COMMIT[:12], "0", "1", "1", "4", "0"]
    assert lines[3:] == ["  apps:", "    configured ConfigMap web/a", "    recreated Deployment web/web: " + why]
    # without a recreated object, the table has its usual columns
    plain = sp.stack_entry(SOURCE, COMMIT, 1, {"counts": {"created": 1}}, {"counts": {"pruned": 0}})
    assert report.summary_lines("c1", [plain])[1].split() == [c.upper() for c in report.COLUMNS]
    assert report.fleet_rows([("c1", [e], False)])[0][1][4] == "6"  # synced: recreated ones too


def test_summary_table_and_details():
    written = [cm(f"cm{i:02d}", action="created") for i in range(23)]
    e1 = sp.stack_entry(SOURCE, COMMIT, 23, {"counts": {"created": 23}, "applied": written}, {"counts": {"pruned": 0}},
                        seconds=2.0)
    absent = sp.resolve([{"repo": "file:///gone", "stack": "old", "state": "absent"}], {})[0]
    e2 = sp.stack_entry(absent, "", 0, None, {"counts": {"pruned": 4}, "pruned": [cm("x")]})
    lines = report.summary_lines("c1", [e1, e2], check_mode=True)
    assert lines[0] == "stacksync summary [c1]"
    assert lines[1] == "  check mode: nothing was changed, the counts say what a sync would do"
    assert lines[2].split() == [c.upper() for c in report.COLUMNS]
    assert lines[3].split() == ["apps", COMMIT[:12], "23", "0", "0", "0", "0", "not", "checked", "2.0", "ok"]
    assert lines[4].split() == ["old", "-", "0", "0", "0", "4", "0", "not", "checked", "0.0", "deleted"]
    # aligned: text columns start, number columns end, where their header does
    assert lines[2].index("RESULT") == lines[3].index(" ok") + 1 == lines[4].index(" deleted") + 1
    assert lines[2].index("HEALTH") == lines[3].index("not checked")
    assert lines[2].index("PRUNED") + len("PRUNED") == lines[4].index(" 4 ") + 2
    assert lines[5] == "  apps:" and lines[6] == "    created ConfigMap web/cm00"
    assert lines.count("    ... and 3 more") == 1 and sum(1 for line in lines if "created ConfigMap" in line) == 20
    assert lines[-2:] == ["  old:", "    pruned ConfigMap web/x"]


def test_the_summary_says_what_went_wrong_in_one_line():
    failed = sp.stack_entry(SOURCE, COMMIT, 1, {"failed": True, "msg": "cannot sync stack 'apps': boom\nat line 3",
                                                "counts": {}}, None)
    disabled = sp.stack_entry(dict(SOURCE, prune=False), COMMIT, 1, {"counts": {}}, None)
    blocked = sp.stack_entry(dict(SOURCE, stack="web"), COMMIT, 1, None, None, blocked=["apps"])
    results = [report.result_text(e) for e in (failed, disabled, blocked)]
    assert results == ["FAILED (pruning not run)", "ok (pruning disabled)", "not applied"]
    lines = report.summary_lines("c1", [failed, blocked])
    assert lines[-4:] == ["  apps:", "    error: boom at line 3", "  web:", "    not applied: it depends on apps, which failed"]


def test_the_summary_does_not_repeat_the_warnings_ansible_prints():
    e = sp.stack_entry(SOURCE, COMMIT, 1, {"counts": {"created": 1}, "applied": [cm("a", action="created")],
                                           "warnings": ["Service default/a belonged to stack 'x'"]}, {"counts": {}})
    lines = report.summary_lines("h", [e])
    assert "  apps:" in lines and not [line for line in lines if "belonged to" in line], lines


def test_the_health_column_says_not_checked_healthy_or_how_many_are_unhealthy():
    applied = [cm("a", action="created", health="Healthy"),
               cm("b", action="created", health="Degraded", health_reason="Failed: boom")]
    unhealthy = sp.stack_entry(SOURCE, COMMIT, 2, {"counts": {"created": 2}, "applied": applied}, None, health_waited=True)
    healthy = sp.stack_entry(SOURCE, COMMIT, 1, {"counts": {"created": 1}, "applied": applied[:1]}, None, health_waited=True)
    unchecked = sp.stack_entry(SOURCE, COMMIT, 2, {"counts": {"created": 2}, "applied": applied[:1]}, None)
    assert [report.health_text(e) for e in (unhealthy, healthy, unchecked)] == ["1 unhealthy", "healthy", "not checked"]
    lines = report.summary_lines("h", [unhealthy])
    assert "    unhealthy ConfigMap web/b: Degraded (Failed: boom)" in lines


def test_stats_carry_the_counts_health_and_error_of_each_stack():
    applied = [cm("b", action="created", health="Degraded", health_reason="Failed: boom")]
    e = sp.stack_entry(SOURCE, COMMIT, 2, {"counts": {"created": 1}, "applied": applied}, {"counts": {"pruned": 0}},
                       health_waited=True)
    stats = report.stats([e])["apps"]
    assert stats["unhealthy"] == [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": "b",
                                   "health": "Degraded", "reason": "Failed: boom"}]
    assert stats["counts"]["created"] == 1 and stats["commit"] == COMMIT and stats["health"] == "unhealthy"
    assert stats["msg"] == "" and not stats["failed"]
    failed = sp.stack_entry(SOURCE, COMMIT, 1, {"failed": True, "msg": "stack 'apps': a\nb", "counts": {}}, None)
    assert report.stats([failed])["apps"]["msg"] == "a b"


# -- the fleet summary --------------------------------------------------------------------------------
def fleet():
    ok = sp.stack_entry(SOURCE, COMMIT, 3, {"counts": {"created": 1, "unchanged": 2}}, {"counts": {"pruned": 1}})
    bad = sp.stack_entry(SOURCE, COMMIT, 3, {"failed": True, "msg": "cannot sync stack 'apps': no\nway", "counts": {}},
                         None)
    return [("a", [ok], False), ("b", [bad], True), ("c", None, True), ("d", [ok], False)]


def test_the_fleet_table_lists_the_failures_first_with_their_error():
    rows = report.fleet_rows(fleet())
    assert [cells[0] for _failed, cells in rows] == ["b", "c", "a", "d"]
    assert rows[0] == (True, ("b", "apps", "https://h.example/r.git manifests", COMMIT[:12], "-", "0", "FAILED: no way"))
    assert rows[1] == (True, ("c", "-", "-", "-", "-", "-", "FAILED before the sync (its error is above)"))
    assert rows[2] == (False, ("a", "apps", "https://h.example/r.git manifests", COMMIT[:12], "3", "1", "ok"))


def test_the_fleet_summary_says_which_clusters_failed_then_shows_the_table():
    lines = report.fleet_lines(fleet())
    assert lines[0] == "stacksync: 2 of 4 clusters failed (b, c), 2 synced"
    assert lines[1].split() == [c.upper() for c in report.FLEET_COLUMNS] and len(lines) == 6
    assert lines[2].startswith("  b ") and lines[2].endswith("FAILED: no way")
    ok = [("a", fleet()[0][1], False)]
    assert report.fleet_lines(ok) == ["stacksync: 1 cluster synced (1 stack)"]  # one cluster: its table is above
    assert report.fleet_lines(ok, check_mode=True) == ["stacksync: 1 cluster checked (check mode: nothing was changed) (1 stack)"]


def test_when_every_cluster_failed_none_is_called_synced():
    """ansible_play_hosts holds the hosts not failed: empty when all failed (one before its sync), not "every host"."""
    assert report.active_hosts({"ansible_play_hosts": []}, ["a", "b"]) == set()
    assert report.active_hosts({"ansible_play_hosts": ["a"]}, ["a", "b"]) == {"a"}
    assert report.active_hosts({}, ["a", "b"]) == {"a", "b"}
    active = report.active_hosts({"ansible_play_hosts": []}, ["c"])
    assert report.fleet_lines([("c", None, "c" not in active)]) == ["stacksync: 1 of 1 cluster failed (c), 0 synced"]


def test_the_fleet_stats_hold_every_cluster_and_the_failures():
    data = report.fleet_stats(fleet())
    assert sorted(data["stacksync"]) == ["a", "b", "c", "d"] and data["stacksync"]["c"] == {}
    assert data["stacksync"]["b"]["apps"]["failed"] and data["stacksync"]["b"]["apps"]["msg"] == "no way"
    assert data["stacksync_failed"] == ["b/apps", "c"]


def test_an_entry_s_message_does_not_name_its_stack_again():
    e = sp.stack_entry(SOURCE, COMMIT, 1, {"failed": True, "msg": "stack 'apps': the Lease is not held", "counts": {}},
                       None)
    assert e["msg"] == "the Lease is not held"


class _HostVars:
    """What the summary reads of ansible-core's HostVars: membership, ``raw_get`` (the host's variables as they are
    held) and ``get`` (templated: recorded here, to tell which one was read)."""

    def __init__(self, hosts):
        self.hosts = hosts
        self.templated = []

    def __contains__(self, host):
        return host in self.hosts

    def raw_get(self, host):
        return self.hosts[host]

    def get(self, host):
        self.templated.append(host)
        return {k: ("templated", v) for k, v in self.hosts[host].items()}


def test_a_hosts_results_list_is_read_as_held_and_anything_else_templated():
    entries = [dict(stack="apps", applied=[{"kind": "ConfigMap", "name": f"c{i}"} for i in range(3)])]
    hostvars = _HostVars({"a": {"stacksync_results": entries, "other": "{{ x }}"}, "b": {}})
    assert report.host_entries(hostvars, "a", "stacksync_results") is entries
    assert hostvars.templated == []  # the list is not walked by the templating again
    assert report.host_entries(hostvars, "a", "other") == ("templated", "{{ x }}")
    assert report.host_entries(hostvars, "b", "stacksync_results") is None and hostvars.templated == ["a", "b"]
    assert report.host_entries(hostvars, "c", "stacksync_results") is None  # not a host of the play


def test_host_entries_of_plain_mappings():
    hostvars = {"a": {"stacksync_results": [{"stack": "s"}]}, "b": None}
    assert report.host_entries(hostvars, "a", "stacksync_results") == [{"stack": "s"}]
    assert report.host_entries(hostvars, "b", "stacksync_results") is None
    assert report.host_entries(hostvars, "z", "stacksync_results") is None
