"""Simulated controllers, run inline after writes (the cluster lock is held).

* namespaces: ``default`` ServiceAccount and ``kube-root-ca.crt`` ConfigMap in new namespaces;
  deletion of a terminating namespace's content, then of the namespace;
* garbage collector: Background / Foreground / Orphan propagation through ownerReferences;
* CRDs: Established after a delay, then served; deletion removes custom objects and the type;
* Deployment -> ReplicaSet -> Pod (and ReplicationController -> Pod), with pod-template labels copied; workload status;
* "kubelet": a new Pod runs and is Ready at once (``pods_ready``) unless its ``nodeSelector`` matches no
  Node (then it stays Pending, unschedulable); a ReplicaSet counts its Ready pods, a Deployment its
  ReplicaSet's, and a Deployment whose pods are not all available after ``progressDeadlineSeconds``
  gets ``Progressing=False`` / ``ProgressDeadlineExceeded``, as the deployment controller sets it.
* aggregator: an APIService's ``Available`` condition (``aggregation.availability``), set again when it,
  a Service or an EndpointSlice changes; a ``v1.<group>``-style APIService per Established CRD version.
"""

from . import aggregation
from .util import deep, dig, now, random_suffix, template_hash

_CM = "kube-controller-manager"
_CRD_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_ROOT_CA_DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
                        "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.")


class Controllers:
    """Reactions of the control plane to stored changes."""

    def __init__(self, cluster, pods_ready=True):
        self.c = cluster
        self.pods_ready = pods_ready
        self._draining = set()  # namespaces being drained (removing their objects calls back here)

    def _rt(self, group, plural, version="v1"):
        return self.c.by_gvr[(group, version, plural)]

    # ----------------------------------------------------------------- hooks
    def written(self, rt, old, new):
        """After a create/update was stored."""
        kind = rt.kind if rt.crd is None else None
        if kind in ("APIService", "Service", "EndpointSlice"):
            self._aggregator(rt, old, new)
        if kind == "Namespace" and old is None:
            self._populate_namespace(new["metadata"]["name"])
        elif kind == "CustomResourceDefinition" and old is None:
            name = new["metadata"]["name"]
            self._set_crd_conditions(name, established=False)
            self.c.schedule(self.c.crd_establish_delay, lambda: self._set_crd_conditions(name, established=True))
        elif kind == "CustomResourceDefinition" and _condition(new, "Established"):
            self.c.register_crd(new)
            self._crd_apiservices(new)
        elif new["metadata"].get("deletionTimestamp") or (old is not None and old.get("spec") == new.get("spec")):
            return
        elif kind == "Deployment":
            self._deployment(new)
        elif kind in ("ReplicaSet", "ReplicationController"):
            self._replicaset(new, rt)
        elif kind in ("StatefulSet", "DaemonSet"):
            self._workload_status(rt, new)
        elif kind == "Pod" and old is None and self.pods_ready:
            if self._schedulable(new):
                self._run_pod(rt, new)
            else:
                self._unschedulable_pod(rt, new)

    def terminating(self, rt, obj):
        """Mutate an object that is about to get its deletionTimestamp."""
        if rt.crd is None and rt.kind == "Namespace":
            obj.setdefault("status", {})["phase"] = "Terminating"
        elif rt.crd is None and rt.kind == "CustomResourceDefinition":
            obj["metadata"].setdefault("finalizers", [])
            if _CRD_FINALIZER not in obj["metadata"]["finalizers"]:
                obj["metadata"]["finalizers"].append(_CRD_FINALIZER)
            conds = [c for c in dig(obj, "status", "conditions", default=None) or [] if c.get("type") != "Terminating"]
            conds.append({"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress",
                          "message": "CustomResource deletion is in progress", "lastTransitionTime": now()})
            obj.setdefault("status", {})["conditions"] = conds

    def deleting(self, rt, obj, propagation):
        """After an object was marked for deletion (it has finalizers)."""
        if rt.crd is None and rt.kind == "Namespace":
            self._drain_namespace(obj["metadata"]["name"])
        elif rt.crd is None and rt.kind == "CustomResourceDefinition":
            self._drain_crd(obj)
        elif propagation == "Orphan":
            self._orphan(rt, obj)
        elif propagation == "Foreground":
            self._foreground(rt, obj)

    def removed(self, rt, obj):
        """After an object left the store."""
        meta = obj["metadata"]
        for drt, dep in self.c.dependents_of(meta["uid"]):
            self._collect(drt, dep)
        for ref in meta.get("ownerReferences") or []:
            owner = self.c.lookup_uid(ref.get("uid"))
            if owner and "foregroundDeletion" in (owner[1]["metadata"].get("finalizers") or []):
                self._foreground(*owner)
        ns = meta.get("namespace")
        if ns:
            nso = self.c._namespace(ns)
            if nso is not None and nso["metadata"].get("deletionTimestamp"):
                self._drain_namespace(ns)
        if rt.crd is None and rt.kind == "CustomResourceDefinition":
            self.c.unregister_crd(meta["name"])
            self._crd_apiservices(obj, removed=True)
        elif rt.crd is None and rt.kind in ("Service", "EndpointSlice"):
            self._aggregator(rt, obj, None)

    # ------------------------------------------------------------ namespaces
    def _populate_namespace(self, ns):
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": ns,
              "annotations": {"kubernetes.io/description": _ROOT_CA_DESCRIPTION}}, "data": {"ca.crt": self.c.ca_pem}}
        self.c.system_write(self._rt("", "serviceaccounts"), sa)
        self.c.system_write(self._rt("", "configmaps"), cm)

    def _drain_namespace(self, ns):
        """Delete what a terminating namespace holds; remove the namespace once it is empty.

        Each removal calls back here (``removed``): the drain in progress carries on instead, so
        every object is deleted once (one DELETED event each) and the depth stays flat.
        """
        if ns in self._draining:
            return
        self._draining.add(ns)
        try:
            for rt in list(self.c.types):
                if not rt.namespaced or rt.is_review:
                    continue
                self.c.objects.setdefault(rt.key, {})  # the type's entry, as a scan of objects[rt.key] made it (it orders dump())
                bucket = self.c.in_namespace.get((rt.key, ns), {})
                for key in sorted(bucket):
                    obj = bucket.get(key)  # None if removed meanwhile (a dependent collected with its owner)
                    if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                        self.c._delete(rt, obj, "Background", False)
        finally:
            self._draining.discard(ns)
        if not self._has_content(ns):
            nso = self.c._namespace(ns)
            if nso is not None and not nso["metadata"].get("finalizers"):
                self.c._remove(self._rt("", "namespaces"), nso)

    def _has_content(self, ns):
        for t in self.c.types:
            if t.namespaced:
                self.c.objects.setdefault(t.key, {})  # as a scan of objects[t.key] did
                if self.c.in_namespace.get((t.key, ns)):
                    return True
        return False

    # -------------------------------------------------------------------- GC
    def _collect(self, rt, dep):
        """An owner of ``dep`` is gone: delete it unless another owner still exists."""
        meta = dep["metadata"]
        refs = meta.get("ownerReferences") or []
        alive = [r for r in refs if self.c.lookup_uid(r.get("uid")) is not None]
        if alive:
            if len(alive) != len(refs):
                new = deep(dep)
                new["metadata"]["ownerReferences"] = alive
                self.c._write(rt, dep, new, "kube-controller-manager", False, None)
            return
        if not meta.get("deletionTimestamp"):
            self.c._delete(rt, dep, "Background", False)

    def _orphan(self, rt, obj):
        uid = obj["metadata"]["uid"]
        for drt, dep in self.c.dependents_of(uid):
            new = deep(dep)
            new["metadata"]["ownerReferences"] = [r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            if not new["metadata"]["ownerReferences"]:
                del new["metadata"]["ownerReferences"]
            self.c._write(drt, dep, new, _CM, False, None)
        self.c.remove_finalizer(rt, obj, "orphan")

    def _foreground(self, rt, obj):
        uid = obj["metadata"]["uid"]
        for drt, dep in self.c.dependents_of(uid):
            if not dep["metadata"].get("deletionTimestamp"):
                self.c._delete(drt, dep, "Foreground", False)
        blocking = [d for _, d in self.c.dependents_of(uid)
                    if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in d["metadata"].get("ownerReferences") or [])]
        if not blocking:
            self.c.remove_finalizer(rt, obj, "foregroundDeletion")

    # ------------------------------------------------------------ aggregator
    def _aggregator(self, rt, old, new):
        """Set the Available condition of the APIServices a written or removed object concerns."""
        if rt.kind == "APIService":
            if old is None or old.get("spec") != new.get("spec"):
                self._apiservice_status(new)
            return
        meta = (new or old)["metadata"]
        ns, name = meta.get("namespace") or "", meta["name"]
        if rt.kind == "EndpointSlice":
            name = (meta.get("labels") or {}).get("kubernetes.io/service-name")
            if old is not None and new is not None and old.get("endpoints") == new.get("endpoints") and old.get("ports") == new.get("ports"):
                return
        elif new is not None and old is not None and old.get("spec") == new.get("spec"):
            return
        for svc in list(self.c.objects[("apiregistration.k8s.io", "apiservices")].values()):
            ref = dig(svc, "spec", "service", default=None) or {}
            if ref.get("namespace") == ns and ref.get("name") == name:
                self._apiservice_status(svc)

    def _apiservice_status(self, apiservice):
        rt = self._rt("apiregistration.k8s.io", "apiservices")
        current = self.c._find(rt, None, apiservice["metadata"]["name"])
        if current is None or current["metadata"].get("deletionTimestamp"):
            return
        status, reason, message = aggregation.availability(current, self._service, self._endpoint_slices)
        old = aggregation.condition(current)
        if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (status, reason, message):
            return
        changed = old is None or old.get("status") != status
        cond = {"type": "Available", "status": status, "lastTransitionTime": now() if changed else old.get("lastTransitionTime"),
                "reason": reason, "message": message}
        new = deep(current)
        new["status"] = {"conditions": [cond]}
        self.c._write(rt, current, new, "kube-apiserver", False, "status")

    def _service(self, ns, name):
        return self.c._find(self._rt("", "services"), ns, name)

    def _endpoint_slices(self, ns, name):
        store = self.c.in_namespace.get((("discovery.k8s.io", "endpointslices"), ns), {})
        return [o for o in store.values() if (o["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name]

    def _crd_apiservices(self, crd, removed=False):
        """The CRD auto-registration: an APIService per served version of an Established CRD's group (``automanaged: "true"``)."""
        rt = self._rt("apiregistration.k8s.io", "apiservices")
        group = crd["spec"]["group"]
        versions = {v["name"] for v in crd["spec"].get("versions") or [] if v.get("served", True)}
        if removed:  # drop the ones no other CRD of the group still serves
            for other in self.c.crd_types.values():
                versions -= {t.version for t in other if t.group == group}
            for v in versions:
                svc = self.c._find(rt, None, aggregation.name_of(group, v))
                if svc is not None and (svc["metadata"].get("labels") or {}).get(aggregation.AUTOMANAGED) == "true":
                    self.c._delete(rt, svc, "Background", False)
            return
        for v in sorted(versions):
            if self.c._find(rt, None, aggregation.name_of(group, v)) is None:
                self.c.system_write(rt, aggregation.local_apiservice(group, v, "true", aggregation.CRD_PRIORITIES), "kube-apiserver")

    # ------------------------------------------------------------------ CRDs
    def _set_crd_conditions(self, name, established):
        """Accept a new CRD's names at once (like the naming controller); mark it Established after the delay."""
        rt = self._rt("apiextensions.k8s.io", "customresourcedefinitions")
        crd = self.c._find(rt, None, name)
        if crd is None or crd["metadata"].get("deletionTimestamp"):
            return
        new = deep(crd)
        t = now()
        new["status"]["acceptedNames"] = deep(crd["spec"]["names"])
        conditions = [{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": t}]
        if established:
            conditions.append({"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                               "message": "the initial names have been accepted", "lastTransitionTime": t})
        new["status"]["conditions"] = conditions
        self.c._write(rt, crd, new, "kube-apiserver", False, "status")

    def _drain_crd(self, crd):
        for rt in [t for t in self.c.types if t.crd == crd["metadata"]["name"]][:1]:
            for _, obj in sorted(self.c.objects[rt.key].items()):
                if not obj["metadata"].get("deletionTimestamp"):
                    self.c._delete(rt, obj, "Background", False)
            if self.c.objects[rt.key]:
                return
        self.c.unregister_crd(crd["metadata"]["name"])
        self.c.remove_finalizer(self._rt("apiextensions.k8s.io", "customresourcedefinitions"), crd, _CRD_FINALIZER)

    # ----------------------------------------------------------- workloads
    def _owned(self, rt, owner):
        uid = owner["metadata"]["uid"]
        return [o for t, o in self.c.dependents_of(uid) if t.key == rt.key]

    def _deployment(self, dep):
        rs_rt = self._rt("apps", "replicasets")
        spec = dep["spec"]
        template = deep(spec.get("template") or {})
        phash = template_hash(template)
        owned = self._owned(rs_rt, dep)
        current = next((r for r in owned if dig(r, "metadata", "labels", "pod-template-hash") == phash), None)
        replicas = spec.get("replicas", 1)
        revisions = [int(dig(r, "metadata", "annotations", "deployment.kubernetes.io/revision", default="0") or 0) for r in owned]
        if current is None:
            revision = str(max(revisions, default=0) + 1)
            current = self.c.system_write(rs_rt, self._new_replicaset(dep, template, phash, replicas, revision))
        elif current["spec"].get("replicas") != replicas:
            scaled = deep(current)
            scaled["spec"]["replicas"] = replicas
            scaled["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/desired-replicas"] = str(replicas)
            current = self.c.system_write(rs_rt, scaled)
        for old in owned:
            if old["metadata"]["name"] != current["metadata"]["name"] and old["spec"].get("replicas"):
                scaled = deep(old)
                scaled["spec"]["replicas"] = 0
                self.c.system_write(rs_rt, scaled)
        self._deployment_status(dep, current, replicas)

    def _new_replicaset(self, dep, template, phash, replicas, revision):
        meta = template.setdefault("metadata", {})
        meta.setdefault("labels", {})["pod-template-hash"] = phash
        selector = deep(dep["spec"].get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = phash
        return {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{dep['metadata']['name']}-{phash}", "namespace": dep["metadata"]["namespace"],
                         "labels": deep(meta["labels"]),
                         "annotations": {"deployment.kubernetes.io/desired-replicas": str(replicas),
                                         "deployment.kubernetes.io/max-replicas": str(replicas + max(1, -(-replicas // 4))),
                                         "deployment.kubernetes.io/revision": revision},
                         "ownerReferences": [_owner_ref(dep)]},
            "spec": {"replicas": replicas, "selector": selector, "template": template},
        }

    def _deployment_status(self, dep, rs, replicas):
        dep_rt = self._rt("apps", "deployments")
        live = self.c._find(dep_rt, dep["metadata"]["namespace"], dep["metadata"]["name"])
        revision = dig(rs, "metadata", "annotations", "deployment.kubernetes.io/revision", default="1")
        if dig(live, "metadata", "annotations", "deployment.kubernetes.io/revision") != revision:
            annotated = deep(live)
            annotated["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = revision
            live = self.c._write(dep_rt, live, annotated, _CM, False, None)
            live = self.c._find(dep_rt, dep["metadata"]["namespace"], dep["metadata"]["name"])
        rs_live = self.c._find(self._rt("apps", "replicasets"), rs["metadata"]["namespace"], rs["metadata"]["name"]) or rs
        ready = min(replicas, dig(rs_live, "status", "availableReplicas", default=0) or 0)
        t = now()
        available = {"type": "Available", "status": "True" if ready >= replicas else "False", "lastUpdateTime": t, "lastTransitionTime": t,
                     "reason": "MinimumReplicasAvailable" if ready >= replicas else "MinimumReplicasUnavailable",
                     "message": "Deployment has minimum availability." if ready >= replicas else "Deployment does not have minimum availability."}
        progressing = {"type": "Progressing", "status": "True", "lastUpdateTime": t, "lastTransitionTime": t,
                       "reason": "NewReplicaSetAvailable" if ready >= replicas else "ReplicaSetUpdated",
                       "message": f'ReplicaSet "{rs["metadata"]["name"]}" has successfully progressed.' if ready >= replicas
                       else f'ReplicaSet "{rs["metadata"]["name"]}" is progressing.'}
        status = {"observedGeneration": live["metadata"].get("generation", 1), "replicas": replicas, "updatedReplicas": replicas,
                  "readyReplicas": ready, "availableReplicas": ready, "terminatingReplicas": 0, "conditions": [available, progressing]}
        if ready < replicas:
            status["unavailableReplicas"] = replicas - ready
        for key in ("readyReplicas", "availableReplicas"):
            if not status[key]:
                del status[key]
        if _status_differs(live.get("status"), status):
            new = _for_status(live, status)
            self.c._write(dep_rt, live, new, _CM, False, "status")
        deadline = live["spec"].get("progressDeadlineSeconds")
        if ready < replicas and deadline is not None:
            key = (live["metadata"]["namespace"], live["metadata"]["name"], live["metadata"].get("generation", 1))
            self.c.schedule(deadline, lambda: self._progress_deadline(key, rs["metadata"]["name"]))

    def _progress_deadline(self, key, rs_name):
        """The progress deadline passed: a Deployment of the same generation still not available stalls."""
        dep_rt = self._rt("apps", "deployments")
        namespace, name, generation = key
        live = self.c._find(dep_rt, namespace, name)
        if live is None or live["metadata"].get("generation", 1) != generation or live["metadata"].get("deletionTimestamp"):
            return
        conditions = dig(live, "status", "conditions", default=None) or []
        progressing = next((c for c in conditions if c.get("type") == "Progressing"), None)
        if _condition(live, "Available") or (progressing or {}).get("reason") == "ProgressDeadlineExceeded":
            return
        t = now()
        stalled = {"type": "Progressing", "status": "False", "lastUpdateTime": t, "lastTransitionTime": t, "reason": "ProgressDeadlineExceeded",
                   "message": f'ReplicaSet "{rs_name}" has timed out progressing.'}
        status = deep(live.get("status") or {})
        status["conditions"] = [c for c in conditions if c.get("type") != "Progressing"] + [stalled]
        self.c._write(dep_rt, live, _for_status(live, status), _CM, False, "status")

    def _replicaset(self, rs, rs_rt=None):
        """A ReplicaSet's (or a ReplicationController's, whose status has no ``terminatingReplicas``) pods and status."""
        pod_rt = self._rt("", "pods")
        rs_rt = rs_rt or self._rt("apps", "replicasets")
        pods = [p for p in self._owned(pod_rt, rs) if not p["metadata"].get("deletionTimestamp")]
        want = rs["spec"].get("replicas", 1)
        for pod in pods[want:]:
            self.c._delete(pod_rt, pod, "Background", False)
        for _ in range(want - len(pods)):
            pod = self._new_pod(rs)
            if self.c.admission.allows(pod_rt, pod):  # else the real controller's create fails (Pod Security)
                self.c.system_write(pod_rt, pod)
        ready = sum(1 for p in self._owned(pod_rt, rs) if not p["metadata"].get("deletionTimestamp") and _condition(p, "Ready"))
        status = {"replicas": want, "fullyLabeledReplicas": want, "observedGeneration": rs["metadata"].get("generation", 1),
                  "readyReplicas": ready, "availableReplicas": ready, "terminatingReplicas": 0}
        if rs_rt.kind == "ReplicationController":
            del status["terminatingReplicas"]
        for key in ("readyReplicas", "availableReplicas", "fullyLabeledReplicas"):
            if not status[key]:
                del status[key]
        live = self.c._find(rs_rt, rs["metadata"]["namespace"], rs["metadata"]["name"])
        if live is not None and _status_differs(live.get("status"), status):
            new = _for_status(live, status)
            self.c._write(rs_rt, live, new, _CM, False, "status")

    def _new_pod(self, rs):
        template = deep(rs["spec"].get("template") or {})
        meta = template.get("metadata") or {}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"{rs['metadata']['name']}-{random_suffix()}", "namespace": rs["metadata"]["namespace"],
                            "labels": deep(meta.get("labels") or {}), "ownerReferences": [_owner_ref(rs)]},
               "spec": template.get("spec") or {}}
        if meta.get("annotations"):
            pod["metadata"]["annotations"] = deep(meta["annotations"])
        return pod

    def _run_pod(self, rt, pod):
        t = now()
        status = {"phase": "Running", "podIP": f"10.244.0.{1 + len(self.c.objects[rt.key]) % 250}", "startTime": t,
                  "conditions": [{"type": c, "status": "True", "lastProbeTime": None, "lastTransitionTime": t}
                                 for c in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
                  "containerStatuses": [{"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": True, "restartCount": 0,
                                         "started": True, "state": {"running": {"startedAt": t}}}
                                        for c in pod["spec"].get("containers") or []],
                  "qosClass": "BestEffort"}
        new = _for_status(pod, status)
        self.c._write(rt, pod, new, "kubelet", False, "status")

    def _schedulable(self, pod):
        """Some Node carries every label of the pod's ``nodeSelector`` (none: schedulable; the simulator has no nodes)."""
        selector = pod["spec"].get("nodeSelector") or {}
        if not selector:
            return True
        nodes = self.c.objects.get(self._rt("", "nodes").key, {}).values()
        return any(all((n["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items()) for n in nodes)

    def _unschedulable_pod(self, rt, pod):
        nodes = len(self.c.objects.get(self._rt("", "nodes").key, {}))
        status = {"phase": "Pending", "qosClass": "BestEffort",
                  "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastProbeTime": None,
                                  "lastTransitionTime": now(),
                                  "message": f"0/{nodes} nodes are available: {nodes} node(s) didn't match Pod's node affinity/selector."}]}
        self.c._write(rt, pod, _for_status(pod, status), "default-scheduler", False, "status")

    def _workload_status(self, rt, obj):
        replicas = obj["spec"].get("replicas", 1) if rt.kind == "StatefulSet" else 1
        ready = replicas if self.pods_ready else 0
        if rt.kind == "StatefulSet":
            status = {"observedGeneration": obj["metadata"].get("generation", 1), "replicas": replicas, "readyReplicas": ready,
                      "currentReplicas": replicas, "updatedReplicas": replicas, "availableReplicas": ready}
        else:
            status = {"observedGeneration": obj["metadata"].get("generation", 1), "desiredNumberScheduled": 1, "currentNumberScheduled": 1,
                      "numberReady": ready, "numberAvailable": ready, "updatedNumberScheduled": 1, "numberMisscheduled": 0}
        if _status_differs(obj.get("status"), status):
            new = _for_status(obj, status)
            self.c._write(rt, obj, new, _CM, False, "status")


def _for_status(obj, status):
    """``obj`` with a new status, for a write of its status subresource (which takes metadata and status from
    it, the rest from the stored object): a copy of the metadata, the rest shared, never changed."""
    new = dict(obj)
    new["metadata"] = deep(obj["metadata"])
    new["status"] = status
    return new


def _condition(obj, ctype):
    return any(c.get("type") == ctype and c.get("status") == "True" for c in dig(obj, "status", "conditions", default=None) or [])


def _owner_ref(owner):
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _status_differs(old, new):
    def strip(s):
        s = deep(s or {})
        for c in s.get("conditions") or []:
            c.pop("lastUpdateTime", None)
            c.pop("lastTransitionTime", None)
        return s
    return strip(old) != strip(new)
