"""Prune safety, proven by property-based tests (issue 9).

Hypothesis generates short sequences of repo states for three stacks in two record namespaces --
``a`` (record in namespace x), ``b`` (record in y) and ``c``, a stack of the same name as ``a`` whose
record is in y (issue 28) -- (objects added, changed, removed, moved between the stacks and between namespaces; ConfigMaps, Secrets, cluster-scoped
ClusterRoles -- sometimes with a stray ``namespace`` in the file --, a custom resource, a Namespace
and a CRD owned by a stack, objects with the ignore annotation) interleaved with out-of-band changes (foreign
objects, the stack label copied onto foreign objects with and without the owner annotation,
whole objects cloned by hand into the other namespace, controller-owned children inheriting labels,
manual edits by another field manager, labels removed or switched to the other stack, ignore
annotations added, objects deleted by hand, foreign objects of the stack's CRD, a CRD installed by
someone else with an object of it in the stack's Namespace, the record namespace an object names removed
-- as an older version applied it -- or switched to the namesake's). Each step syncs both stacks, in a
generated order, with the real engine -- always through a **stale discovery cache** written when the
sequence began, before any of its CRDs existed.

Invariants, checked after every sync:

* every DELETE the engine sent targeted an object that, just before the sync, carried this stack's
  label *and* an owner mark matching its own identity, named this stack's record namespace (or none,
  while no stack of the same name kept its record elsewhere), was declared by no other stack's record
  (in any record namespace), was not desired and was not protected (ownerReferences, ignore
  annotation); no other object of the sequence vanished (except children garbage-collected after
  their owner);
* after a sync without error, the stack's live objects equal its desired set (content included:
  out-of-band edits reverted), except protected objects and Namespaces reported as skipped;
* an empty desired set never prunes (the engine refuses without ``allow_empty``).

``STACKSYNC_PROPERTY_EXAMPLES`` sets the number of sequences against the simulator (default 500);
``STACKSYNC_PROPERTY_EXAMPLES_REAL`` the batch run through the ``kube`` fixture (default 20; a
real cluster when ``STACKSYNC_TEST_KUBECONFIG`` is set). Seeded (derandomized): reproducible.
"""

import contextlib
import itertools
import os
import shutil
import tempfile
import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    CHECKSUM_ANNOTATION,
    IGNORE_ANNOTATION,
    OWNER_ANNOTATION,
    RECORD_LABEL,
    RECORD_NAMESPACE_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId, identity_digest, parse_group_kind
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import owner_mark
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import object_name
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import Discovery
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from . import helpers as H

RBAC = "rbac.authorization.k8s.io"
SLOTS = [
    ("", "ConfigMap", "c0"), ("", "ConfigMap", "c1"), ("", "ConfigMap", "c2"),
    ("", "Secret", "s0"),
    (RBAC, "ClusterRole", "r0"), (RBAC, "ClusterRole", "r1"),
    (H.CR_GROUP, "Widget", "w0"), (H.CR_GROUP, "Widget", "w1"),
]
STACKS = ("a", "b", "c")  # c: the same name as a, its record in b's record namespace
VERBS = (["get"], ["get", "list"], ["watch"])
OOB_OPS = ("foreign", "copy_label", "child", "edit", "unlabel", "ignore", "delete", "foreign_z", "relabel", "clone",
           "foreign_thing", "late_kind", "unbind", "rebind")
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD_GK = ("apiextensions.k8s.io", "CustomResourceDefinition")

# -- strategies -----------------------------------------------------------------------------------
slot_state = st.one_of(
    st.fixed_dictionaries({
        "stack": st.sampled_from(STACKS),
        "ns": st.sampled_from(("x", "y", None, "z")),  # None: the stack's default namespace
        "variant": st.integers(0, 2),
        "ignored": st.sampled_from((False,) * 7 + (True,)),
        "stray_ns": st.booleans(),  # cluster-scoped only: the file names a namespace anyway
    }),
    st.none(),
)
repo_state = st.fixed_dictionaries({
    "slots": st.lists(slot_state, min_size=len(SLOTS), max_size=len(SLOTS)),
    "z": st.sampled_from((False, False, True)),  # stack a declares Namespace <p>-z
    "crd": st.sampled_from((False, True)),  # stack a declares the CRD of Things (a kind newer than the cache)
})
oob_op = st.tuples(st.sampled_from(OOB_OPS), st.integers(0, 60), st.booleans())
step = st.fixed_dictionaries({
    "repo": repo_state,
    "oob": st.lists(oob_op, max_size=2),
    "order": st.permutations(STACKS),
})
sequence = st.lists(step, min_size=2, max_size=3)

EXAMPLES = H.env_int("STACKSYNC_PROPERTY_EXAMPLES", 500)
BASE_KINDS = frozenset(H.KINDS) | {CRD_GK}
EXAMPLES_REAL = H.env_int("STACKSYNC_PROPERTY_EXAMPLES_REAL", 20)


class Stats:
    def __init__(self):
        self.sequences = 0
        self.steps = 0
        self.syncs = 0
        self.failed_syncs = 0
        self.deletes_checked = 0
        self.pruned = 0
        self.wrongly_deleted = 0
        self.oob = 0
        self.refused_empty = 0
        self.faults = 0
        self.leases_left = 0
        self.holders_kept = 0  # Namespace / CRD prunes refused because they held others' objects
        self.info_checked = 0  # syncs whose prunes were compared with stack_info's would_prune


class Sequence:
    """One generated sequence in its own namespaces and stacks."""

    _counter = itertools.count()
    _run = uuid.uuid4().hex[:4]

    def __init__(self, client, discovery, stats, sim=None, faults=None):
        self.sim = sim
        self.faults = list(faults or [])  # one per sync (cycled); None: no fault
        self._backoff = client.backoff
        if self.faults:
            client.backoff = 0.002  # the retries themselves are what is tested, not their pauses
        self.p = f"r{self._run}{next(self._counter)}"
        self.client = client
        self.discovery = discovery
        self.stats = stats
        self.ns = {"x": self.p + "-x", "y": self.p + "-y", "z": self.p + "-z"}
        self.stack = {"a": self.p + "-a", "b": self.p + "-b", "c": self.p + "-a"}
        self.record_ns = {"a": self.ns["x"], "b": self.ns["y"], "c": self.ns["y"]}
        self.default_ns = {"a": self.ns["x"], "b": self.ns["y"], "c": self.ns["y"]}
        self.oob_counter = itertools.count()
        self.deletes = []
        # per-sequence kinds: Things (stack a may declare their CRD) and Gadgets (someone else's CRD)
        self.thing_group = f"{self.p}.stacksync.io"
        self.gadget_group = f"g.{self.p}.stacksync.io"
        self.crd_names = {"Thing": f"things.{self.thing_group}", "Gadget": f"gadgets.{self.gadget_group}"}
        H.KINDS[(self.thing_group, "Thing")] = (self.thing_group + "/v1",
                                                "/apis/" + self.thing_group + "/v1/namespaces/{ns}/things", True)
        H.KINDS[(self.gadget_group, "Gadget")] = (self.gadget_group + "/v1",
                                                  "/apis/" + self.gadget_group + "/v1/namespaces/{ns}/gadgets", True)
        H.KINDS.setdefault(CRD_GK, ("apiextensions.k8s.io/v1", CRDS, False))
        # every sync reads a discovery cache written before any of these kinds existed
        self.cache_dir = tempfile.mkdtemp(prefix="stacksync-prop-cache-")
        self.stale_index = discovery.index
        self._orig_request = client.request
        client.request = self._request

    # every request the engine sends goes through here: DELETEs are recorded
    def _request(self, method, path, *args, **kwargs):
        if method == "DELETE":
            self.deletes.append(path)
        return self._orig_request(method, path, *args, **kwargs)

    def setup(self):
        for key in ("x", "y"):
            H.create_namespace(self.client, self.ns[key])

    def cleanup(self):
        self.client.request = self._orig_request
        self.client.backoff = self._backoff
        for key in ("x", "y", "z"):
            H.delete_quietly(self.client, "/api/v1/namespaces/" + self.ns[key])
        snap = self.snapshot()
        for oid in snap:
            if not oid.namespace and oid.kind != "Namespace":
                H.delete_quietly(self.client, H.object_path(oid))
        for name in self.crd_names.values():
            H.delete_quietly(self.client, f"{CRDS}/{name}")
        H.KINDS.pop((self.thing_group, "Thing"), None)
        H.KINDS.pop((self.gadget_group, "Gadget"), None)
        shutil.rmtree(self.cache_dir, ignore_errors=True)

    def write_stale_cache(self):
        """The cache as a run wrote it when the sequence began (fresh time: the engine trusts it)."""
        Discovery(self.client, cache_dir=self.cache_dir)._save_cache(self.stale_index)

    def crd(self, kind):
        plural = kind.lower() + "s"
        group = self.thing_group if kind == "Thing" else self.gadget_group
        return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": self.crd_names[kind]},
                "spec": {"group": group, "scope": "Namespaced",
                         "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
                         "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                             "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}

    def served(self, kind, timeout=30):
        """Wait until the kind's objects can be listed (False if its CRD is gone or going)."""
        group, plural = (self.thing_group, "things") if kind == "Thing" else (self.gadget_group, "gadgets")
        deadline = time.time() + timeout
        while True:
            crd = self.client.get_or_none(f"{CRDS}/{self.crd_names[kind]}")
            if crd is None or (crd.get("metadata") or {}).get("deletionTimestamp"):
                return False
            try:
                self.client.list(f"/apis/{group}/v1/{plural}", limit=1)
                return True
            except ApiError:
                if time.time() > deadline:
                    return False
                time.sleep(0.1)

    # -- model ----------------------------------------------------------------------------------
    def desired(self, repo, stack):
        """``[(ObjectId, manifest)]`` of ``stack`` in ``repo`` (ignored ones included)."""
        out = []
        if stack == "a" and repo.get("crd"):
            out.append((ObjectId(*CRD_GK, "", self.crd_names["Thing"]), self.crd("Thing")))
        if stack == "a" and repo["z"]:
            out.append((ObjectId("", "Namespace", "", self.ns["z"]),
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns["z"]}}))
        for (group, kind, slot), state in zip(SLOTS, repo["slots"]):
            if state is None or state["stack"] != stack:
                continue
            name = f"{self.p}-{slot}"
            api_version, _path, namespaced = H.KINDS[(group, kind)]
            meta = {"name": name}
            ns_key = state["ns"]
            if ns_key == "z" and not (stack == "a" and repo["z"]):
                ns_key = "x"
            if namespaced:
                ns = self.ns[ns_key] if ns_key else self.default_ns[stack]
                if ns_key:
                    meta["namespace"] = ns
            else:
                ns = ""
                if state["stray_ns"]:
                    meta["namespace"] = self.ns["y"]
            if state["ignored"]:
                meta["annotations"] = {IGNORE_ANNOTATION: "true"}
            m = {"apiVersion": api_version, "kind": kind, "metadata": meta}
            v = state["variant"]
            if kind == "ConfigMap":
                m["data"] = {"v": f"value-{v}", "slot": slot}
            elif kind == "Secret":
                m["stringData"] = {"k": f"secret-{v}"}
            elif kind == "ClusterRole":
                m["rules"] = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": VERBS[v]}]
            else:
                m["spec"] = {"size": v, "slot": slot}
            out.append((ObjectId(group, kind, ns, name), m))
        return out

    @staticmethod
    def content_matches(oid, manifest, live):
        # fields of other managers (a foreign object taken over) may stay: ours must match
        if oid.kind == "ConfigMap":
            data = live.get("data") or {}
            return all(data.get(k) == v for k, v in manifest["data"].items())
        if oid.kind == "Secret":
            return (live.get("data") or {}).get("k") == H.b64(manifest["stringData"]["k"])
        if oid.kind == "ClusterRole":
            rules = [{k: v for k, v in r.items() if v not in (None, [])} for r in live.get("rules") or []]
            return rules == manifest["rules"]
        if oid.kind == "Widget":
            return live.get("spec") == manifest["spec"]
        return True

    # -- cluster --------------------------------------------------------------------------------
    def snapshot(self):
        """``{ObjectId: obj}`` of every object of this sequence (by name prefix)."""
        out = {}
        prefix = self.p + "-"
        crd_suffix = "." + self.thing_group
        kinds = dict((gk, v) for gk, v in H.KINDS.items()
                     if gk in BASE_KINDS or gk in ((self.thing_group, "Thing"), (self.gadget_group, "Gadget")))

        def ours(gk, name):
            if gk == CRD_GK:
                return name.endswith(crd_suffix)
            return gk[0] in (self.thing_group, self.gadget_group) or name.startswith(prefix)

        if self.sim is not None:  # the simulator's state dump: no HTTP round trips
            dump = self.sim.dump()
            for (group, kind), (_av, tmpl, namespaced) in kinds.items():
                plural = tmpl.rsplit("/", 1)[1]
                for obj in dump.get(group + "/" + plural if group else plural, ()):
                    meta = obj.get("metadata") or {}
                    if ours((group, kind), meta.get("name") or ""):
                        oid = ObjectId(group, kind, (meta.get("namespace") or "") if namespaced else "", meta["name"])
                        out[oid] = obj
            return out
        for (group, kind), (_av, tmpl, namespaced) in kinds.items():
            if kind == "Widget" or (namespaced and group):
                path = tmpl.replace("/namespaces/{ns}", "")
            else:
                path = f"/api/v1/{kind.lower()}s" if not group else H.collection_path(group, kind)
            try:
                items = self.client.list(path)
            except ApiError as e:
                if e.is_not_found:
                    continue  # a per-sequence kind whose CRD does not exist (now)
                raise
            for obj in items:
                meta = obj.get("metadata") or {}
                if not ours((group, kind), meta.get("name") or ""):
                    continue
                oid = ObjectId(group, kind, (meta.get("namespace") or "") if namespaced else "", meta["name"])
                out[oid] = obj
        return out

    def settle(self):
        """Wait until a Namespace being deleted is gone (a real cluster deletes asynchronously)."""
        z = self.client.get_or_none("/api/v1/namespaces/" + self.ns["z"])
        if z is not None and (z.get("metadata") or {}).get("deletionTimestamp"):
            H.wait_namespaces_gone(self.client, [self.ns["z"]])
        for name in self.crd_names.values():
            deadline = time.time() + 60
            while True:
                crd = self.client.get_or_none(f"{CRDS}/{name}")
                if crd is None or not (crd.get("metadata") or {}).get("deletionTimestamp"):
                    break
                assert time.time() < deadline, f"CRD {name} still terminating after 60s"
                time.sleep(0.2)

    def out_of_band(self, op, target, flag, snap):
        """Apply one out-of-band change as another actor would."""
        k = next(self.oob_counter)
        c = self.client
        owned = sorted((oid, obj) for oid, obj in snap.items()
                       if any(H.owned(obj, self.stack[s], oid) for s in STACKS)
                       and oid.kind not in ("Namespace", "CustomResourceDefinition"))
        stack = self.stack["a" if flag else "b"]
        if op == "foreign":
            if target % 2:
                name = f"{self.p}-r{target % 3}" if target % 3 == 0 else f"{self.p}-fr{k}"
                body = {"apiVersion": RBAC + "/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": []}
                c.create(H.collection_path(RBAC, "ClusterRole"), body)
            else:
                name = f"{self.p}-c{target % 3}" if target % 3 == 0 else f"{self.p}-f{k}"
                ns = self.ns["x" if flag else "y"]
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
                        "data": {"foreign": "yes"}}
                c.create(H.collection_path("", "ConfigMap", ns), body)
        elif op == "copy_label":
            meta = {"name": f"{self.p}-l{k}", "namespace": self.ns["x"], "labels": {STACK_LABEL: stack}}
            donors = [obj for oid, obj in owned if H.labels_of(obj).get(STACK_LABEL) == stack]
            if target % 2 and donors:
                ann = H.annotations_of(donors[target % len(donors)])
                meta["annotations"] = {key: ann[key] for key in (OWNER_ANNOTATION, CHECKSUM_ANNOTATION) if key in ann}
            elif target % 2:
                meta["annotations"] = {OWNER_ANNOTATION: "0" * 20}
            c.create(H.collection_path("", "ConfigMap", self.ns["x"]),
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"copied": "yes"}})
        elif op == "child":
            parents = [(oid, obj) for oid, obj in owned if oid.kind != "Secret"]
            if not parents:
                return
            poid, parent = parents[target % len(parents)]
            pmeta = parent["metadata"]
            cid = ObjectId(poid.group, poid.kind, poid.namespace, f"{poid.name}-k{k}")
            ann = dict(H.annotations_of(parent))
            ann.pop(IGNORE_ANNOTATION, None)
            if flag:  # worst case: a mark that matches the child's own identity
                ann[OWNER_ANNOTATION] = owner_mark(H.labels_of(parent).get(STACK_LABEL), cid)
            meta = {"name": cid.name, "labels": dict(H.labels_of(parent)), "annotations": ann,
                    "ownerReferences": [{"apiVersion": parent["apiVersion"], "kind": poid.kind, "name": poid.name,
                                         "uid": pmeta["uid"], "controller": True, "blockOwnerDeletion": True}]}
            if cid.namespace:
                meta["namespace"] = cid.namespace
            body = {"apiVersion": parent["apiVersion"], "kind": poid.kind, "metadata": meta}
            for field in ("data", "rules", "spec"):
                if field in parent:
                    body[field] = parent[field]
            c.create(H.collection_path(cid.group, cid.kind, cid.namespace), body)
        elif op == "clone":
            # a human copies a live object, label and annotations included, to the other namespace
            namespaced = [(oid, obj) for oid, obj in owned if oid.namespace and oid.namespace in (self.ns["x"], self.ns["y"])]
            if not namespaced:
                return
            oid, obj = namespaced[target % len(namespaced)]
            other = self.ns["y"] if oid.namespace == self.ns["x"] else self.ns["x"]
            meta = {"name": oid.name, "namespace": other, "labels": dict(H.labels_of(obj)),
                    "annotations": dict(H.annotations_of(obj))}
            body = {"apiVersion": obj["apiVersion"], "kind": oid.kind, "metadata": meta}
            for field in ("data", "spec"):
                if field in obj:
                    body[field] = obj[field]
            c.create(H.collection_path(oid.group, oid.kind, other), body)
        elif op in ("edit", "unlabel", "ignore", "delete", "relabel", "unbind", "rebind"):
            if not owned:
                return
            oid, obj = owned[target % len(owned)]
            if op == "delete":
                c.delete(H.object_path(oid))
                return
            if op == "unlabel":
                body = {"metadata": {"labels": {STACK_LABEL: None}}}
            elif op == "relabel":  # someone moves it to the other stack by hand (the mark stays the old one)
                mine = H.labels_of(obj).get(STACK_LABEL)
                body = {"metadata": {"labels": {STACK_LABEL: self.stack["b"] if mine == self.stack["a"] else self.stack["a"]}}}
            elif op == "ignore":
                body = {"metadata": {"annotations": {IGNORE_ANNOTATION: "true"}}}
            elif op == "unbind":  # as an older version of the collection applied it
                body = {"metadata": {"annotations": {RECORD_NAMESPACE_ANNOTATION: None}}}
            elif op == "rebind":  # names the other record namespace (the namesake's, for a and c)
                bound = H.annotations_of(obj).get(RECORD_NAMESPACE_ANNOTATION)
                body = {"metadata": {"annotations": {
                    RECORD_NAMESPACE_ANNOTATION: self.ns["y"] if bound == self.ns["x"] else self.ns["x"]}}}
            elif oid.kind == "ConfigMap":
                body = {"data": {"v": "edited"}}
            elif oid.kind == "Secret":
                body = {"data": {"k": H.b64("edited")}}
            elif oid.kind == "ClusterRole":
                body = {"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}
            else:
                body = {"spec": {"size": 99}}
            H.merge_patch(c, oid, body)
        elif op == "foreign_thing":
            # someone else's object of the stack's CRD (its deletion would take it along)
            if ObjectId(*CRD_GK, "", self.crd_names["Thing"]) not in snap or not self.served("Thing"):
                return
            z = snap.get(ObjectId("", "Namespace", "", self.ns["z"]))
            ns = self.ns["z"] if flag and z is not None and not (z.get("metadata") or {}).get("deletionTimestamp") else self.ns["x"]
            c.create(f"/apis/{self.thing_group}/v1/namespaces/{ns}/things",
                     {"apiVersion": self.thing_group + "/v1", "kind": "Thing",
                      "metadata": {"name": f"{self.p}-t{k}", "namespace": ns}, "spec": {"n": k}})
        elif op == "late_kind":
            # someone installs a CRD after the cache was written and puts an object of it in the stack's namespace
            if ObjectId(*CRD_GK, "", self.crd_names["Gadget"]) not in snap:
                c.create(CRDS, self.crd("Gadget"))
            if not self.served("Gadget"):
                return
            z = snap.get(ObjectId("", "Namespace", "", self.ns["z"]))
            ns = self.ns["z"] if z is not None and not (z.get("metadata") or {}).get("deletionTimestamp") else self.ns["y"]
            c.create(f"/apis/{self.gadget_group}/v1/namespaces/{ns}/gadgets",
                     {"apiVersion": self.gadget_group + "/v1", "kind": "Gadget",
                      "metadata": {"name": f"{self.p}-g{k}", "namespace": ns}})
        elif op == "foreign_z":
            z = snap.get(ObjectId("", "Namespace", "", self.ns["z"]))
            if z is None or (z.get("metadata") or {}).get("deletionTimestamp"):
                return
            c.create(H.collection_path("", "ConfigMap", self.ns["z"]),
                     {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": f"{self.p}-fz{k}", "namespace": self.ns["z"]}, "data": {"z": "1"}})
        self.stats.oob += 1

    @staticmethod
    def bound(obj):
        return H.annotations_of(obj).get(RECORD_NAMESPACE_ANNOTATION)

    def records(self):
        """``[(namespace, stack, {identity digest})]`` of the stack records of the sequence (both record namespaces),
        and ``{(namespace, stack): {(group, kind)}}``: the kinds each record lists."""
        out, kinds = [], {}
        for key in ("x", "y"):
            for obj in self.client.list(H.collection_path("", "ConfigMap", self.ns[key]), label_selector=RECORD_LABEL):
                data = obj.get("data") or {}
                out.append((self.ns[key], data.get("stack"), set(d for d in (data.get("objects") or "").split(",") if d)))
                kinds[(self.ns[key], data.get("stack"))] = set(
                    parse_group_kind(x) for x in (data.get("groupKinds") or "").split(",") if x)
        return out, kinds

    def prunable(self, s, desired_ids, records):
        """The prune rule for stack ``s``, as the README states it, on the state before the sync."""
        name, own = self.stack[s], self.record_ns[s]

        def rule(oid, obj):
            if not H.may_prune(obj, oid, name, desired_ids):
                return False
            bound = H.annotations_of(obj).get(RECORD_NAMESPACE_ANNOTATION)
            if bound and bound != own:
                return False  # a namesake's
            if not bound and any(stack == name and ns != own for ns, stack, _d in records):
                return False  # whose is it? a stack of its name keeps its record elsewhere
            digest = identity_digest(oid)
            return not any(digest in declared for ns, stack, declared in records if (ns, stack) != (own, name))
        return rule

    # -- one sync and its invariants ------------------------------------------------------------
    def _inject(self):
        """Script this sync's fault (if any) into the simulator."""
        if not self.faults:
            return None
        fault = self.faults[self.stats.syncs % len(self.faults)]
        if fault is not None:
            code, verb, count = fault
            self.sim.fail_next(count, code=0 if code == "drop" else code, verb=verb, retry_after=0, drop=code == "drop")
            self.stats.faults += count
        return fault

    def sync_and_check(self, repo, s, before, fault_free=False):
        desired = self.desired(repo, s)
        desired_ids = {oid for oid, _m in desired}
        by_path = {H.object_path(oid): (oid, obj) for oid, obj in before.items()}
        records, recorded_kinds = self.records()
        prunable = self.prunable(s, desired_ids, records)
        # the kinds the sync lists: what its record names and what it declares (never anything else)
        listed = recorded_kinds.get((self.record_ns[s], self.stack[s]), set()) | set(oid.group_kind for oid in desired_ids)
        self.deletes = []
        fault = None if fault_free else self._inject()
        # every stack's record namespace is one the runs know of (a record elsewhere is not believed: a tenant could
        # make one; its objects are then kept, neither pruned nor handed over)
        options = dict(namespace=self.default_ns[s], record_namespace=self.record_ns[s], discovery_cache_dir=self.cache_dir,
                       record_namespaces=sorted(set(self.record_ns.values())))
        would_prune = None
        if fault is None and desired:  # what stack_info says the sync will delete (it must agree exactly)
            self.write_stale_cache()
            report = H.manager(self.client, self.stack[s], **options).inspect([m for _oid, m in desired])
            would_prune = {(o["kind"], o["namespace"], o["name"]) for o in report["objects"] if o["status"] == "would_prune"}
        self.write_stale_cache()
        cs, err = H.sync(self.client, self.stack[s], [m for _oid, m in desired], lock_timeout=5 if self.faults else 30,
                         **options)
        if would_prune is not None and err is None:
            pruned = {(o["kind"], o["namespace"], o["name"]) for o in cs.pruned}
            assert pruned == would_prune, f"stack_info said {sorted(would_prune)} would be pruned, the sync pruned {sorted(pruned)}"
            self.stats.info_checked += 1
        if self.faults:
            self.sim.configure_faults()  # drop what the run did not consume
            # a fault on the Lease's release DELETE leaves the Lease held until it expires (60 s, by design):
            # let it expire now instead of waiting
            lease = f"/apis/coordination.k8s.io/v1/namespaces/{self.record_ns[s]}/leases/{object_name(self.stack[s])}"
            if self.client.get_or_none(lease) is not None:
                self.stats.leases_left += 1
                H.delete_quietly(self.client, lease)
        after = self.snapshot()
        self.stats.syncs += 1
        context = f"stack {s} ({self.stack[s]}), desired {sorted(map(str, desired_ids))}, fault {fault}, error {err}"
        if cs is not None and cs.errors:  # an apply failed: nothing may have been deleted (Leases aside)
            assert not [p for p in self.deletes if "/leases/" not in p], f"pruned after a failed apply: {context}"

        # 1. every DELETE targeted a prunable object of this stack
        for path in self.deletes:
            if "/leases/" in path:
                continue
            self.stats.deletes_checked += 1
            hit = by_path.get(path)
            if hit is None or not prunable(hit[0], hit[1]):
                self.stats.wrongly_deleted += 1
                pytest.fail("engine sent DELETE {} for an object it may not prune ({}); {}".format(
                    path, "unknown object" if hit is None else hit[1].get("metadata"), context))
        # 2. nothing else vanished
        bad = H.deletion_violations(before, after, self.stack[s], desired_ids, prunable=prunable)
        if bad:
            self.stats.wrongly_deleted += len(bad)
            pytest.fail(f"objects deleted that were not prunable by {self.stack[s]}: {[str(oid) for oid, _o in bad]}; {context}")
        self.stats.pruned += len(cs.pruned) if cs is not None else 0

        if not desired:
            # an empty render never prunes
            assert err is not None and ("empty" in str(err) or fault), context
            self.stats.refused_empty += 1
            return after
        if err is not None and fault is not None:
            self.stats.failed_syncs += 1
            return after  # a fault made it fail: the final fault-free sync must converge
        if err is not None:
            self.stats.failed_syncs += 1
            assert not (cs and cs.pruned), f"a failed run pruned: {context}"
            pytest.fail(f"a fault-free sync failed: {context}")

        # 3. converged: live == desired (content included), apart from protected objects
        for oid, manifest in desired:
            if H.is_true(H.annotations_of(manifest).get(IGNORE_ANNOTATION) or ""):
                continue
            was = before.get(oid)
            if was is not None and H.is_true(H.annotations_of(was).get(IGNORE_ANNOTATION) or ""):
                continue  # the live copy opted out
            live = after.get(oid)
            assert live is not None, f"desired {oid} missing after sync; {context}"
            assert H.owned(live, self.stack[s], oid) and self.bound(live) == self.record_ns[s], \
                "desired {} not stamped as {}'s: {}; {}".format(oid, s, live["metadata"], context)
            assert self.content_matches(oid, manifest, live), "desired {} has drifted content {}; {}".format(
                oid, {k: live.get(k) for k in ("data", "rules", "spec")}, context)
        skipped_holders = {(ref.get("kind"), ref.get("name")) for ref in cs.skipped
                           if ref.get("kind") in ("Namespace", "CustomResourceDefinition")}
        self.stats.holders_kept += len(skipped_holders)
        for oid, obj in after.items():
            if oid in desired_ids or not H.owned(obj, self.stack[s], oid) or H.protected(obj):
                continue
            if self.bound(obj) != self.record_ns[s] or oid.group_kind not in listed:
                continue  # a namesake's (released to it, or never this stack's); or of a kind it never had
            if (oid.kind, oid.name) in skipped_holders:
                continue  # kept: it still holds objects that are not this stack's to delete
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue  # being deleted (foreground / finalizers on a real cluster)
            if fault is not None:
                continue  # a refused list or delete leaves it for the next run (checked by the final sync)
            pytest.fail(f"{oid} is {self.stack[s]}'s, not desired and not protected, but was not pruned ({obj['metadata']}; "
                        f"skipped: {cs.skipped}; released: {cs.released}); {context}")
        return after

    def run(self, steps):
        self.setup()
        snap = self.snapshot()
        for st_ in steps:
            self.stats.steps += 1
            self.settle()
            snap = self.snapshot()
            for op, target, flag in st_["oob"]:
                try:
                    self.out_of_band(op, target, flag, snap)
                except ApiError as e:
                    if not (e.is_conflict or e.is_not_found):
                        raise
                snap = self.snapshot()
            for s in st_["order"]:
                snap = self.sync_and_check(st_["repo"], s, snap)
        if self.faults:  # after faults, one fault-free run per stack converges
            self.settle()
            snap = self.snapshot()
            for s in STACKS:
                snap = self.sync_and_check(steps[-1]["repo"], s, snap, fault_free=True)
        self.stats.sequences += 1


def run_batch(kube, steps, stats, faults=None):
    client, discovery = _connection(kube)
    seq = None
    try:
        seq = Sequence(client, discovery, stats, sim=kube.sim, faults=faults)
        seq.run(steps)
    finally:
        if seq is not None:
            with contextlib.suppress(Exception):
                seq.cleanup()


_CONNECTIONS = {}


def _connection(kube):
    """One client and one discovery per cluster (loading credentials per sequence costs more than a sync)."""
    key = kube.kubeconfig
    if key not in _CONNECTIONS:
        client = H.client_for(kube.kubeconfig)
        H.ensure_crd(client)
        d = Discovery(client)
        deadline = time.time() + 60
        while d.index.lookup(H.CR_GROUP, "Widget") is None and time.time() < deadline:
            time.sleep(0.2)
            d.refresh()
        _CONNECTIONS.clear()  # the previous module's simulator is gone
        _CONNECTIONS[key] = (client, d)
    return _CONNECTIONS[key]


def _settings(n):
    # no shrinking by default (it can take minutes against a server); STACKSYNC_PROPERTY_SHRINK=1 to shrink
    phases = [Phase.explicit, Phase.reuse, Phase.generate]
    if os.environ.get("STACKSYNC_PROPERTY_SHRINK"):
        phases.append(Phase.shrink)
    return settings(max_examples=n, derandomize=True, database=None, deadline=None, print_blob=True, phases=phases,
                    suppress_health_check=list(HealthCheck))


SIM_STATS = Stats()


@pytest.mark.slow
@pytest.mark.sim_only
@_settings(EXAMPLES)
@given(steps=sequence)
def test_prune_safety_simulator(kubesim, steps):
    """>= 500 seeded sequences against the simulator: nothing outside the prune rule is ever deleted."""
    run_batch(kubesim, steps, SIM_STATS)


@pytest.mark.sim_only
def test_prune_safety_simulator_figures(kubesim):
    """Runs after the batch above (file order): record and check the figures."""
    if SIM_STATS.sequences == 0:
        pytest.skip("the property batch did not run")
    H.record_figures("prune_property_simulator", sequences=SIM_STATS.sequences, steps=SIM_STATS.steps,
                     syncs=SIM_STATS.syncs, out_of_band_changes=SIM_STATS.oob, deletes_checked=SIM_STATS.deletes_checked,
                     pruned=SIM_STATS.pruned, empty_refused=SIM_STATS.refused_empty,
                     namespaces_and_crds_kept=SIM_STATS.holders_kept, stack_info_compared=SIM_STATS.info_checked,
                     wrongly_deleted=SIM_STATS.wrongly_deleted, examples_setting=EXAMPLES)
    assert SIM_STATS.wrongly_deleted == 0
    assert SIM_STATS.sequences >= min(EXAMPLES, 500) or os.environ.get("STACKSYNC_PROPERTY_EXAMPLES")


REAL_STATS = Stats()


@_settings(EXAMPLES_REAL)
@given(steps=sequence)
def test_prune_safety_kube(kube, steps):
    """The smaller seeded batch through ``kube``: a real cluster under STACKSYNC_TEST_KUBECONFIG."""
    run_batch(kube, steps, REAL_STATS)
    H.record_figures("prune_property_kube", sequences=REAL_STATS.sequences, syncs=REAL_STATS.syncs,
                     pruned=REAL_STATS.pruned, wrongly_deleted=REAL_STATS.wrongly_deleted,
                     real_cluster=not kube.is_sim)


# -- the same under injected faults ----------------------------------------------------------------
EXAMPLES_FAULTS = H.env_int("STACKSYNC_PROPERTY_EXAMPLES_FAULTS", 60)
fault = st.one_of(
    st.none(),
    st.tuples(st.just(403), st.sampled_from(("patch", "delete", "list")), st.just(1)),  # refused: not retried
    st.tuples(st.sampled_from((500, 429, "drop")), st.sampled_from((None, "patch", "delete", "list", "get")),
              st.integers(1, 8)),  # retried; 6 in a row on one request exhausts the retries
)
FAULT_STATS = Stats()


@pytest.mark.sim_only
@_settings(EXAMPLES_FAULTS)
@given(steps=sequence, faults=st.lists(fault, min_size=1, max_size=6))
def test_prune_safety_under_faults(kubesim, steps, faults):
    """Scripted faults (refused and failing requests, dropped connections) on the syncs: still nothing
    outside the prune rule is deleted, a run with a failed apply deletes nothing, and after the
    faults one fault-free run per stack converges."""
    run_batch(kubesim, steps, FAULT_STATS, faults=faults)
    H.record_figures("prune_property_faults", sequences=FAULT_STATS.sequences, syncs=FAULT_STATS.syncs,
                     faults_injected=FAULT_STATS.faults, failed_syncs=FAULT_STATS.failed_syncs,
                     deletes_checked=FAULT_STATS.deletes_checked, wrongly_deleted=FAULT_STATS.wrongly_deleted,
                     leases_left_by_a_failed_release=FAULT_STATS.leases_left)
