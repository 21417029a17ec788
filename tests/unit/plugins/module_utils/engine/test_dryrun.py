"""dryrun.py: what check mode cannot validate with the server, and lists (``not_validated``) instead of counting it."""

from types import SimpleNamespace

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.dryrun import CRD_FIRST, DryRuns, _marks, dry_run_gap
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.run_sources import RunSources
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

from .test_standin import PLANNED, FakeClient, desired


def test_refusals_that_do_not_say_the_run_would_fail():
    pod = desired("Pod", name="p")
    sa = 'pods "p" is forbidden: error looking up service account web/%s: serviceaccount "%s" not found'
    assert dry_run_gap(pod, ApiError(403, "Forbidden", sa % ("runner", "runner")), {("web", "runner")}, False) == (
        "it runs as ServiceAccount web/runner, which this sync creates: the server cannot check it before that "
        "ServiceAccount exists")
    assert dry_run_gap(pod, ApiError(403, "Forbidden", sa % ("other", "other")), {("web", "runner")}, True) is None
    assert dry_run_gap(pod, ApiError(403, "Forbidden", sa % ("default", "default")), set(), True).endswith(
        "which the namespace gets once created: the server cannot check it before the namespace exists")
    assert dry_run_gap(pod, ApiError(403, "Forbidden", sa % ("default", "default")), set(), False) is None
    assert dry_run_gap(pod, ApiError(400, "BadRequest", 'admission webhook "x" does not support dry run'), set(), False) == (
        'the server cannot dry-run it: admission webhook "x" does not support dry run')
    assert dry_run_gap(pod, ApiError(404, "NotFound", 'namespaces "web" not found'), set(), False) == (
        "its namespace web does not exist (yet: another task or source may create it)")
    assert dry_run_gap(pod, ApiError(422, "Invalid", 'pods "p" is invalid'), set(), False) is None


def test_a_missing_namespace_of_a_sources_run_is_a_gap_only_if_an_earlier_source_creates_it():
    pod, missing = desired("Pod", name="p"), ApiError(404, "NotFound", 'namespaces "web" not found')

    def source(stack, earlier, *objects):
        return {"stack": stack, "source": f"git {stack}", "earlier": earlier, "namespace": "",
                "objects": [list(o) for o in objects]}

    web = ("v1", "Namespace", "", "web")
    # the only source of its run: nothing else creates the namespace, the run fails as the dry run does
    assert dry_run_gap(pod, missing, set(), False, RunSources([])) is None
    # a source applied after it creates the namespace: too late for this stack's apply
    assert dry_run_gap(pod, missing, set(), False, RunSources([source("later", False, web)])) is None
    # one applied before it does
    assert dry_run_gap(pod, missing, set(), False, RunSources([source("base", True, web)])) == (
        "its namespace web does not exist yet: git base (stack 'base'), applied before this stack, creates it")
    # one whose render failed declares nothing the run writes; another namespace is no claim on this one
    assert dry_run_gap(pod, missing, set(), False, RunSources([dict(source("broken", True), objects=None),
                                                               source("base", True, ("v1", "Namespace", "", "api"))])) is None
    # not a sources run (the stack module in a task of its own)
    assert dry_run_gap(pod, missing, set(), False, RunSources(None)).startswith("its namespace web does not exist (yet:")


def test_dry_runs_list_custom_resources_of_new_crds_and_objects_of_failed_namespaces():
    runs = DryRuns(SimpleNamespace(client=FakeClient(), map=lambda fn, items: [fn(i) for i in items],
                                   opts=SimpleNamespace(poll_interval=0)))
    crd = SimpleNamespace(oid=ObjectId("apiextensions.k8s.io", "CustomResourceDefinition", "", "gadgets.x.io"),
                          manifest={"spec": {"group": "x.io", "names": {"kind": "Gadget"}}})
    runs.seen(crd, "created", {}, None)
    runs.seen(desired("Namespace", ns="", name="web"), "created", PLANNED, None)
    runs.seen(desired("Namespace", ns="", name="bad"), None, None, "403 Forbidden")
    gadget = SimpleNamespace(oid=ObjectId("x.io", "Gadget", "web", "g"), from_crd=False)
    assert runs.unchecked(gadget) == CRD_FIRST and runs.unchecked(desired(from_crd=True)) == CRD_FIRST
    assert runs.unchecked(desired(ns="bad")) == "its namespace bad would not be created (see its error)"
    assert runs.unchecked(desired()) is None  # before stage 1: its stand-in is not made yet
    runs.open([desired(), gadget])
    assert runs.unchecked(desired()) is None and runs.target(desired(), "/p")[2] is not None
    changeset = ChangeSet()
    assert runs.skip(gadget, None, CRD_FIRST) == ("created", None, None)
    runs.end(changeset)
    assert changeset.warnings == ["check mode could not validate 1 object(s) with the server (listed with not_validated): "
                                  "Gadget.x.io web/g: " + CRD_FIRST]


def test_an_existing_namespace_the_run_relabels_is_a_warning():
    runs = DryRuns(SimpleNamespace(client=FakeClient(), map=lambda fn, items: [fn(i) for i in items],
                                   opts=SimpleNamespace(poll_interval=0)))
    live = {"metadata": {"name": "web", "labels": {"team": "a", "stacksync.io/stack": "s"}}}
    runs.seen(desired("Namespace", ns="", name="web"), "configured", {"metadata": {"labels": {"team": "a", "stacksync.io/stack": "t"}}},
              None, live)
    runs.seen(desired("Namespace", ns="", name="other"), "configured", PLANNED, None, {"metadata": {"labels": {"team": "a"}}})
    changeset = ChangeSet()
    runs.end(changeset)
    assert changeset.warnings == ["Namespace other: this sync changes its labels or annotations; check mode's dry runs of its "
                                  "objects were answered for the current ones (Pod Security admission and policies' "
                                  "namespaceSelectors read them)"]


def test_admission_reads_the_labels_and_annotations_but_the_stacks_own():
    labels, annotations = _marks(PLANNED)
    assert "stacksync.io/stack" not in labels and labels["team"] == "a"
    assert set(annotations) == {"scheduler.alpha.kubernetes.io/node-selector", "kubectl.kubernetes.io/last-applied-configuration"}
    assert _marks({}) == [{}, {}]


def test_service_accounts_the_run_creates_are_known_before_the_dry_runs():
    runs = DryRuns(SimpleNamespace(client=FakeClient(), map=lambda fn, items: [fn(i) for i in items],
                                   opts=SimpleNamespace(poll_interval=0, run_sources=None)))
    sa, existing = desired("ServiceAccount", name="runner"), desired("ServiceAccount", name="old")
    runs.begin([sa, existing, desired()], {existing.oid: None})
    assert runs.creates == {("web", "runner")}
    pod = desired("Pod", name="p")
    error = ApiError(403, "Forbidden", 'error looking up service account web/runner: serviceaccount "runner" not found')
    assert runs.refused(pod, error, None) == (error, "it runs as ServiceAccount web/runner, which this sync creates: the "
                                                     "server cannot check it before that ServiceAccount exists")
    assert runs.target(pod, "/api/v1/namespaces/web/pods/p") == ("/api/v1/namespaces/web/pods/p", pod.manifest, None)
    changeset = ChangeSet()
    runs.end(changeset)  # nothing opened, nothing unvalidated: nothing to say
    assert changeset.warnings == []
