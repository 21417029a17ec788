"""insync.py: the objects a run found in sync, remembered by uid and resourceVersion, and the manager's use of them
on the Kubernetes API simulator (an object no one changed is not walked again; any change is)."""

import json
import os
import stat
import types

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import insync
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import manager as M
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan as P
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import CONFIGURED, UNCHANGED

from ..simengine import cm_path, configmap, live, namespace, sync, unique


def obj(uid="u1", version="7", checksum="sha256:a"):
    return {"metadata": {"uid": uid, "resourceVersion": version, "annotations": {"stacksync.io/checksum": checksum}}}


def test_an_object_is_seen_only_with_the_same_uid_version_checksum_and_take_over():
    verified = insync.Verified({"u1": ["7", "sha256:a", True]})
    assert verified.seen(obj(), "sha256:a", True) and verified.now == {"u1": ["7", "sha256:a", True]}
    assert not verified.changed
    for live_obj, checksum, take_over in [(obj(version="8"), "sha256:a", True),  # changed by anyone
                                          (obj(uid="u2"), "sha256:a", True),  # deleted and created again
                                          (obj(), "sha256:b", True),  # changed in git
                                          (obj(), "sha256:a", False),  # another ssa policy
                                          ({"metadata": {"resourceVersion": "7"}}, "sha256:a", True),
                                          (obj(), None, True)]:
        assert not insync.Verified(verified.known).seen(live_obj, checksum, take_over)


def test_a_new_plan_starts_from_nothing_and_what_it_notes_is_what_changed():
    verified = insync.Verified({"u1": ["7", "sha256:a", True]})
    verified.note(obj(uid="u2", version="3"), "sha256:b", True)
    verified.note({"metadata": {}}, "sha256:c", True)  # nothing to know it by: not noted
    assert verified.now == {"u2": ["3", "sha256:b", True]} and verified.changed
    verified.start()
    assert verified.now == {} and verified.changed  # the object the earlier run knew is no longer found in sync
    assert verified.seen(obj(uid="u2", version="3"), "sha256:b", True)  # an earlier plan of the run walked it
    assert verified.now == {"u2": ["3", "sha256:b", True]}
    assert insync.Verified("not a mapping").known == {}


def test_the_memo_file_is_one_per_server_stack_and_options_under_the_code(tmp_path):
    base = dict(cache_dir=str(tmp_path), server="https://a:6443", stack="s", record_namespace="kube-system",
                field_manager="stacksync", takeover_managers=None, code="c0de")
    path = insync.memo_path(**base)
    assert path.startswith(str(tmp_path / "insync") + os.sep)
    for name, other in [("server", "https://b:6443"), ("stack", "t"), ("record_namespace", "ops"),
                        ("field_manager", "other"), ("takeover_managers", ["kubectl"]), ("code", "c0df")]:
        assert insync.memo_path(**dict(base, **{name: other})) != path
    assert insync.memo_path(**dict(base, cache_dir=None)) is None
    assert insync.memo_path(**dict(base, server=None)) is None  # a client without a server URL: nothing remembered
    assert insync.memo_path(**dict(base, code=None)) is None  # the deciding code unknown: nothing remembered


def test_what_a_run_found_is_kept_privately_read_back_and_not_written_again_unchanged(tmp_path):
    path = str(tmp_path / "cache" / "insync" / "m.json")
    assert insync.load(path).known == {}  # nothing kept yet
    verified = insync.load(path)
    verified.note(obj(), "sha256:a", True)
    insync.save(path, verified)
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = insync.load(path)
    assert again.known == {"u1": ["7", "sha256:a", True]}
    assert again.seen(obj(), "sha256:a", True)
    before = os.stat(path).st_mtime_ns
    os.utime(path, ns=(before - 10**9, before - 10**9))
    insync.save(path, again)  # the same objects found in sync: not written
    assert os.stat(path).st_mtime_ns == before - 10**9
    for text in ["{", json.dumps({"format": 99, "objects": {"u1": ["7", "sha256:a", True]}}), "[]"]:
        with open(path, "w") as f:
            f.write(text)
        assert insync.load(path).known == {}  # unreadable, or not this format: nothing known


def test_a_memo_that_cannot_be_written_is_not_kept_and_no_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    verified = insync.Verified()
    verified.note(obj(), "sha256:a", True)
    insync.save(str(blocker / "insync" / "m.json"), verified)  # its directory cannot be made
    assert blocker.read_text() == "x"


def test_the_code_digest_follows_the_source_and_is_none_without_one():
    digest = insync.code_digest([P, insync])
    assert digest and digest == insync.code_digest([P, insync])
    assert insync.code_digest([insync, P]) != digest
    assert insync.code_digest([types.ModuleType("nowhere")]) is None
    assert M.deciding_code() == insync.code_digest([P, M._drift, M._owned, M._fieldsv1, M._diff, insync])


# -- the manager: a run's walks on the simulator ---------------------------------------------------------------


@pytest.fixture
def walks(monkeypatch):
    """The names of the objects the runs walk (the drift of their managedFields)."""
    names = []
    real = P.drift_of

    def counted(manifest, *args, **kwargs):
        names.append(manifest["metadata"]["name"])
        return real(manifest, *args, **kwargs)

    monkeypatch.setattr(P, "drift_of", counted)
    return names


def test_an_object_found_in_sync_is_walked_again_only_once_someone_changed_it(sim_client, tmp_path, walks):
    client = sim_client
    ns, stack, cache = unique("insync"), unique("s"), str(tmp_path / "cache")
    objects = [namespace(ns), configmap("a", ns, k="git"), configmap("b", ns, k="git")]
    sync(client, stack, objects, discovery_cache_dir=cache)
    assert sorted(walks) == sorted([ns, "a", "b"])  # the server's answers to the applies: in sync, noted
    del walks[:]
    cs = sync(client, stack, objects, discovery_cache_dir=cache)
    assert walks == [] and {e.action for e in cs.entries} == {UNCHANGED}  # no one changed them: not walked
    # someone takes a field of "a": its resourceVersion changes, the walk finds the drift, the apply takes it back
    client.apply(cm_path(ns, "a"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": ns},
                                    "data": {"k": "by hand"}}, "kubectl", force=True)
    cs = sync(client, stack, objects, discovery_cache_dir=cache)
    assert walks == ["a", "a", "a"]  # by each plan (the plan is made again under the Lease), and the apply's answer
    assert sorted((e.action, e.oid.name) for e in cs.entries) == sorted([(CONFIGURED, "a"), (UNCHANGED, ns), (UNCHANGED, "b")])
    assert live(client, cm_path(ns, "a"))["data"] == {"k": "git"}
    del walks[:]
    # someone applies the same value: only the field's owner changes (and so the resourceVersion)
    client.apply(cm_path(ns, "b"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": ns},
                                    "data": {"k": "git"}}, "kubectl", force=True)
    cs = sync(client, stack, objects, discovery_cache_dir=cache)
    assert walks == ["b", "b", "b"]
    assert sorted((e.action, e.oid.name) for e in cs.entries) == sorted([(CONFIGURED, "b"), (UNCHANGED, ns), (UNCHANGED, "a")])
    del walks[:]
    # a change in git is applied whatever the memo says (no walk: the checksum differs), its answer walked
    changed = [namespace(ns), configmap("a", ns, k="git"), configmap("b", ns, k="new")]
    cs = sync(client, stack, changed, discovery_cache_dir=cache)
    assert sorted((e.action, e.oid.name) for e in cs.entries) == sorted([(CONFIGURED, "b"), (UNCHANGED, ns), (UNCHANGED, "a")])
    assert walks == ["b"]
    del walks[:]
    cs = sync(client, stack, changed, discovery_cache_dir=cache)
    assert walks == [] and {e.action for e in cs.entries} == {UNCHANGED}
    # without a cache directory every object is walked, by the first plan only (nothing written, no second plan)
    sync(client, stack, changed)
    assert sorted(walks) == sorted([ns, "a", "b"])


def test_an_answer_that_is_not_in_sync_is_not_noted(sim_client, tmp_path, monkeypatch):
    client = sim_client
    ns, stack, cache = unique("insync-not"), unique("s"), str(tmp_path / "cache")
    objects = [namespace(ns), configmap("a", ns, k="git")]
    real, walks = P.drift_of, []

    def lost_always(manifest, *args, **kwargs):  # as if the server had dropped a field of git (an unknown field)
        return real(manifest, *args, **kwargs) or [{"manager": "stacksync", "operation": "Apply", "fields": ["data.k"]}]

    monkeypatch.setattr(P, "drift_of", lost_always)
    sync(client, stack, objects, discovery_cache_dir=cache)
    monkeypatch.setattr(P, "drift_of", lambda manifest, *a, **kw: walks.append(manifest["metadata"]["name"]) or real(manifest, *a, **kw))
    cs = sync(client, stack, objects, discovery_cache_dir=cache)
    assert sorted(walks) == sorted([ns, "a"]) and {e.action for e in cs.entries} == {UNCHANGED}  # walked: not noted
