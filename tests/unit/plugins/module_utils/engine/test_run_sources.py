"""run_sources.py: what the other sources of a sources run declare (declared elsewhere, two sources one object)."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId, identity_digest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Snapshot
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.run_sources import RunSources


class D:
    """A Desired as far as these rules read it."""

    def __init__(self, oid, ignored=False):
        self.oid, self.ignored = oid, ignored

    def named(self):
        return str(self.oid)


CM = ObjectId("", "ConfigMap", "web", "shared")
ROLE = ObjectId("rbac.authorization.k8s.io", "ClusterRole", "", "reader")


def entry(stack, objects, earlier=False, namespace="", source=None):
    return {"stack": stack, "source": source or stack + "-src", "namespace": namespace, "earlier": earlier,
            "objects": objects}


def test_nothing_given_is_nothing_declared():
    rs = RunSources(None)
    assert not rs and rs.declared(None) is None and rs.declared({"d": ["x"]}) == {"d": ["x"]}
    todo = [D(CM)]
    assert rs.split(todo, Snapshot(), "a", "a-src") == (todo, [], [])


def test_identities_resolve_the_namespace_as_the_other_source_would():
    rs = RunSources([entry("b", [["v1", "ConfigMap", "", "shared"]], namespace="web"),
                     entry("c", [["rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"],
                                 ["v1", "ConfigMap", "", "dflt"]])], default_namespace="mine")
    declared = rs.declared(None)
    assert declared[identity_digest(CM)] == ["b"]  # its own namespace
    assert declared[identity_digest(ROLE)] == ["c"]  # cluster-scoped: no namespace
    assert declared[identity_digest(ObjectId("", "ConfigMap", "mine", "dflt"))] == ["c"]  # this run's default
    assert identity_digest(ObjectId("", "ConfigMap", "web", "dflt")) not in declared


def test_declared_merges_the_records_read():
    rs = RunSources([entry("b", [["v1", "ConfigMap", "web", "shared"]])])
    merged = rs.declared({identity_digest(CM): ["b", "z"], "other": ["y"]})
    assert merged[identity_digest(CM)] == ["b", "z"] and merged["other"] == ["y"]


@pytest.mark.parametrize("bad", [
    [{"stack": "b", "objects": [["v1", "ConfigMap", "x"]]}],
    [{"stack": "b", "objects": [["v1", "ConfigMap", "x", 3]]}],
    [{"objects": []}],
    [{"stack": "b", "colour": "blue"}],
    ["b"],
])
def test_malformed_entries_are_refused(bad):
    with pytest.raises(ValueError, match="other_sources"):
        RunSources(bad)


def snap(ours=(), others=None):
    s = Snapshot()
    s.ours = dict((oid, (None, {})) for oid in ours)
    s.others = dict(others or {})
    return s


def test_an_object_two_sources_declare_stays_with_its_owner():
    # a comes first in the run, b second: what each one's run is told about the other
    of_a = RunSources([entry("b", [["v1", "ConfigMap", "web", "shared"]], earlier=False)])
    of_b = RunSources([entry("a", [["v1", "ConfigMap", "web", "shared"]], earlier=True)])
    d, mine = D(CM), D(ObjectId("", "ConfigMap", "web", "mine"))
    # it carries a's label: a applies it, b leaves it to a
    assert of_a.split([d], snap(ours=[CM]), "a", "a-src") == ([d], [], [])
    keep, yielded, warnings = of_b.split([d, mine], snap(others={CM: "a"}), "b", "b-src")
    assert keep == [mine] and [y[0] for y in yielded] == [d]
    assert "also declared by source a-src (stack 'a'), which owns it" in yielded[0][1]
    (warning,) = warnings
    assert "a-src (stack 'a') and b-src (stack 'b')" in warning and "stay with stack 'a', which owns it" in warning
    # it carries b's label: b applies it, a leaves it to b although a comes first
    assert of_b.split([d], snap(ours=[CM]), "b", "b-src") == ([d], [], [])
    keep, yielded, _w = of_a.split([d], snap(others={CM: "b"}), "a", "a-src")
    assert keep == [] and "stack 'b'), which owns it" in yielded[0][1]


def test_an_object_nobody_of_the_run_owns_goes_to_the_first_source():
    d = D(CM)
    first = RunSources([entry("b", [["v1", "ConfigMap", "web", "shared"]], earlier=False)])
    second = RunSources([entry("a", [["v1", "ConfigMap", "web", "shared"]], earlier=True)])
    for others in ({}, {CM: "z"}):  # absent, or another stack's (not of this run)
        assert first.split([d], snap(others=others), "a", "a-src")[0] == [d]
        keep, yielded, _w = second.split([d], snap(others=others), "b", "b-src")
        assert keep == [] and "which comes first in the run" in yielded[0][1]


def test_ignored_objects_and_objects_only_this_source_declares_are_applied():
    rs = RunSources([entry("a", [["v1", "ConfigMap", "web", "shared"]], earlier=True)])
    ignored, alone = D(CM, ignored=True), D(ObjectId("", "ConfigMap", "web", "alone"))
    assert rs.split([ignored, alone], snap(others={CM: "a"}), "b", "b-src") == ([ignored, alone], [], [])


def test_warnings_are_one_per_source_and_short():
    rs = RunSources([entry("a", [["v1", "ConfigMap", "web", f"c{i}"] for i in range(8)], earlier=True)])
    todo = [D(ObjectId("", "ConfigMap", "web", f"c{i}")) for i in range(8)]
    _keep, yielded, warnings = rs.split(todo, snap(), "b", "b-src")
    assert len(yielded) == 8 and len(warnings) == 1
    assert "8 object(s)" in warnings[0] and "and 3 more" in warnings[0] and "c5" not in warnings[0]


def test_what_a_source_that_did_not_render_owns_stays_with_it():
    # its declared set is unknown this run: nothing carrying its label is taken over, declared twice or not
    rs = RunSources([{"stack": "a", "source": "a-src", "namespace": "", "earlier": True, "objects": None},
                     entry("c", [["v1", "ConfigMap", "web", "shared"]], earlier=False)])
    assert rs and rs.declared(None) is not None and identity_digest(CM) in rs.declared(None)
    d, other = D(CM), D(ObjectId("", "ConfigMap", "web", "theirs"))
    keep, yielded, (warning,) = rs.split([d, other], snap(others={CM: "a", other.oid: "a"}), "b", "b-src")
    assert keep == [] and [y[0] for y in yielded] == [d, other]
    assert yielded[1][1] == ("owned by source a-src (stack 'a'), whose source could not be rendered in this run: "
                             "left to it until it stops declaring it")
    assert warning.startswith("2 object(s) that b-src (stack 'b') declares belong to a-src (stack 'a'), whose source "
                              "could not be rendered in this run")
    # what it does not own is this run's to apply
    assert rs.split([other], snap(others={other.oid: "z"}), "b", "b-src")[0] == [other]
    assert RunSources([{"stack": "a", "objects": None}]).declared(None) is None


def test_a_confined_source_claims_nothing_outside_its_confinement():
    # tenant a (confined to namespace team-a) declares tenant b's ConfigMap and a ClusterRole: no claim on either,
    # so b applies its own object (a's run refuses a's copy) and b's prune is not held back by a's declaration
    hostile = dict(entry("a", [["v1", "ConfigMap", "web", "shared"], ["rbac.authorization.k8s.io/v1", "ClusterRole",
                                                                        "", "reader"]], earlier=True),
                   policy={"allowed_namespaces": ["team-a"]})
    rs = RunSources([hostile])
    d = D(CM)
    assert rs.split([d], snap(), "b", "b-src") == ([d], [], [])
    assert rs.declared() is None or identity_digest(CM) not in rs.declared()
    assert identity_digest(ROLE) not in (rs.declared() or {})
    # inside its confinement it claims as any source does
    allowed = RunSources([dict(hostile, policy={"allowed_namespaces": ["web"], "allow_cluster_scoped": True})])
    assert allowed.split([d], snap(), "b", "b-src")[0] == []
    assert identity_digest(ROLE) in allowed.declared()


def test_each_list_of_declarations_is_parsed_once(monkeypatch):
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine import run_sources

    parsed = []
    real = run_sources._identities
    monkeypatch.setattr(run_sources, "_identities", lambda obj, ns: parsed.append(obj) or real(obj, ns))
    objects = [["v1", "ConfigMap", "web", "shared"], ["v1", "ConfigMap", "web", "other"]]
    for _run in range(4):  # every run of a sources task is handed the same list
        rs = RunSources([entry("b", objects)])
        assert identity_digest(CM) in rs.declared(None) and rs.declared(None)[identity_digest(CM)] == ["b"]
    assert len(parsed) == 2
    RunSources([entry("b", list(objects))])  # another list: parsed
    assert len(parsed) == 4
    RunSources([entry("b", objects, namespace="elsewhere")])  # the same list read with another default: parsed
    assert len(parsed) == 6
    objects.append(["v1", "ConfigMap", "web", "third"])  # changed since: parsed again
    assert RunSources([entry("b", objects)]).claims(ObjectId("", "ConfigMap", "web", "third"))
    assert len(parsed) == 9


def test_declared_elsewhere_is_a_mapping_of_every_digest():
    rs = RunSources([entry("b", [["v1", "ConfigMap", "web", "shared"]]),
                     entry("c", [["v1", "ConfigMap", "web", "shared"], ["v1", "ConfigMap", "web", "c-only"]])])
    declared = rs.declared({"from-a-record": ["z"]})
    only_c = identity_digest(ObjectId("", "ConfigMap", "web", "c-only"))
    assert declared.get(identity_digest(CM)) == ["b", "c"] and declared[only_c] == ["c"]
    assert declared.get("nothing") is None and "nothing" not in declared and "from-a-record" in declared
    # each declared object in both scopes (its kind says which one it is)
    unscoped = [identity_digest(ObjectId("", "ConfigMap", "", name)) for name in ("shared", "c-only")]
    assert set(declared) == {identity_digest(CM), only_c, "from-a-record", *unscoped} and len(declared) == 5
    assert dict(declared) == {identity_digest(CM): ["b", "c"], only_c: ["c"], "from-a-record": ["z"],
                              unscoped[0]: ["b", "c"], unscoped[1]: ["c"]} and declared
