"""apply.py: what the applier says about objects it takes over from other stacks."""

from types import SimpleNamespace

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils import apply as a
from ansible_collections.stacksync.k8s.plugins.module_utils.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import ObjectId


def desired(name, ignored=False):
    oid = ObjectId("", "ConfigMap", "apps", name)
    return SimpleNamespace(oid=oid, ignored=ignored, named=lambda: f"ConfigMap apps/{name}")


def test_one_object_taken_over_is_named_alone():
    assert a.takeover_warning("old", "new", ["ConfigMap apps/a"]) == (
        "ConfigMap apps/a belonged to stack 'old'; stack 'new' takes it over")


def test_many_objects_taken_over_make_one_warning_with_the_first_names():
    names = [f"ConfigMap apps/c{i}" for i in range(8)]
    assert a.takeover_warning("old", "new", names) == (
        "8 objects belonged to stack 'old'; stack 'new' takes them over: ConfigMap apps/c0; ConfigMap apps/c1; "
        "ConfigMap apps/c2; ConfigMap apps/c3; ConfigMap apps/c4; and 3 more")
    assert a.takeover_warning("old", "new", names[:2]).endswith("takes them over: ConfigMap apps/c0; ConfigMap apps/c1")


def test_shared_objects_warn_once_per_stack_that_loses_objects():
    objs = [desired("a"), desired("b"), desired("c"), desired("d", ignored=True), desired("mine")]
    snap = SimpleNamespace(others={o.oid: stack for o, stack in zip(objs, ["x", "y", "x", "x"])})
    changeset = ChangeSet()
    a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=False, stack="s"), changeset)
    assert changeset.warnings == [
        "2 objects belonged to stack 'x'; stack 's' takes them over: ConfigMap apps/a; ConfigMap apps/c",
        "ConfigMap apps/b belonged to stack 'y'; stack 's' takes it over",
    ]


def test_shared_objects_fail_with_fail_on_shared():
    objs = [desired("a")]
    snap = SimpleNamespace(others={objs[0].oid: "x"})
    with pytest.raises(a.ApplyError, match=r"objects belong to other stacks \(fail_on_shared is set\): "
                                           r"ConfigMap apps/a \(stack 'x'\)"):
        a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=True, stack="s"), ChangeSet())
