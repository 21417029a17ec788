"""The simulated cluster state: typed object store, write pipeline, managed fields and watch events.

Every public method takes the cluster lock; controllers (``controllers.py``) run inline after writes
while the lock is held, so a write and its consequences are atomic for observers.

Stored objects are never modified in place: a write stores a new object (built from copies of what it
changes). So watch events, GET/LIST answers and write answers share the stored objects (see
:meth:`Cluster.view`) and can be serialized after the lock is released; code that changes an object
works on a copy (:meth:`Cluster.render`, ``util.deep``).
"""

import base64
import collections
import json
import threading

from . import aggregation, errors, fields
from .admission import Admission
from .controllers import Controllers
from .defaults import (
    allocate_cluster_ip,
    allocate_node_ports,
    apply_defaults,
    carry_allocated,
    check_types,
    finish_create,
    prepare_for_create,
    prepare_for_update,
    validate,
)
from .patch import json_patch, merge_patch, strategic_merge_patch
from .resources import BUILTINS, CREATE_ON_UPDATE, GENERATION_KINDS, ResourceType
from .schema import SKELETONS, Root
from .selectors import field_match, label_match, parse_field_selector, parse_label_selector
from .unknown import check_apply, strip_unknown
from .util import deep, dig, new_uid, now, random_suffix

_SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
IMMORTAL_NAMESPACES = ("default", "kube-public", "kube-system")
_EVENT_LOG = 20000


class Cluster:
    """Thread-safe in-memory API state."""

    def __init__(self, crd_establish_delay=0.1, pods_ready=True, ca_pem=""):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.types = list(BUILTINS)
        self.crd_types = {}
        self.objects = collections.defaultdict(dict)
        self.in_namespace = collections.defaultdict(dict)  # (type key, namespace) -> the part of objects[type key] in it
        self.by_uid = {}
        self.dependents = collections.defaultdict(set)
        self.rv = 100
        self.events = collections.deque(maxlen=_EVENT_LOG)
        self.next_ip = 10
        self.next_node_port = 30079
        self.crd_establish_delay = crd_establish_delay
        self.ca_pem = ca_pem
        self.controllers = Controllers(self, pods_ready)
        self.admission = Admission(self)
        self._timers = []
        self._ctxs = {}  # id(type) -> (type, schema Root)
        self._decoded = {}  # see _decoded()
        self._index_types()
        self._bootstrap()

    # ----------------------------------------------------------------- types
    def _index_types(self):
        by_gvr = {(t.group, t.version, t.plural): t for t in self.types}
        by_kind = {}
        for t in self.types:
            by_kind.setdefault((t.group, t.kind), t)
        served = {(t.group, t.version) for t in self.types}
        by_key = {}
        for t in self.types:
            by_key.setdefault(t.key, t)
        # one assignment: readers without the lock see the old or the new indexes, never a mix
        self._indexes = (by_gvr, by_kind, served, by_key)
        self.by_gvr, self.by_kind, self.served, self._by_key = self._indexes

    def resolve(self, group, version, plural):
        """The served resource type, or a 404 like the real server's."""
        by_gvr, _, served, _ = self._indexes  # a consistent snapshot; no lock needed
        rt = by_gvr.get((group, version, plural))
        if rt is None:
            if (group, version) not in served:
                raise errors.page_not_found()
            raise errors.unknown_resource()
        return rt

    def type_for_kind(self, api_version, kind):
        """Resource type for an apiVersion/kind pair (None if not served)."""
        group, _, version = api_version.rpartition("/")
        by_gvr, by_kind, _, _ = self._indexes
        rt = by_kind.get((group, kind))
        if rt is not None and rt.version != version:
            rt = by_gvr.get((group, version, rt.plural), rt)
        return rt

    def register_crd(self, crd):
        """Serve the resource types a CRD defines (called once it is Established)."""
        spec = crd["spec"]
        names = spec["names"]
        new = []
        for v in spec.get("versions") or []:
            if not v.get("served", True):
                continue
            rt = ResourceType(spec["group"], v["name"], names["plural"], names["kind"], spec.get("scope") == "Namespaced",
                              tuple(names.get("shortNames") or ()), subresources=tuple(sorted((v.get("subresources") or {}).keys())),
                              categories=tuple(names.get("categories") or ()), singular=names.get("singular") or names["kind"].lower(),
                              crd=crd["metadata"]["name"], schema=dig(v, "schema", "openAPIV3Schema", default={}) or {})
            new.append(rt)
        self.crd_types[crd["metadata"]["name"]] = new
        self._rebuild_types()

    def unregister_crd(self, name):
        """Stop serving a CRD's types."""
        if self.crd_types.pop(name, None) is not None:
            self._rebuild_types()

    def _rebuild_types(self):
        self.types = list(BUILTINS) + [t for ts in self.crd_types.values() for t in ts]
        self._index_types()

    # ------------------------------------------------------------- bootstrap
    def _bootstrap(self):
        ns_rt = self.by_gvr[("", "v1", "namespaces")]
        for name in _SYSTEM_NAMESPACES:
            self.create(ns_rt, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, "kube-apiserver")
        crb = self.by_gvr[("rbac.authorization.k8s.io", "v1", "clusterroles")]
        for name, rules in _BOOTSTRAP_ROLES.items():
            body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}, "rules": rules}
            self.create(crb, None, body, "kube-apiserver")
        apiservices = self.by_gvr[("apiregistration.k8s.io", "v1", "apiservices")]
        for group, version in aggregation.builtin_group_versions(self.types):
            self.create(apiservices, None, aggregation.local_apiservice(group, version), "kube-apiserver")

    def unavailable_group_versions(self):
        """Aggregated group-versions whose APIService names a server (none answers here): see ``aggregation.unavailable``."""
        with self.lock:
            stored = list(self.objects[("apiregistration.k8s.io", "apiservices")].values())
        return aggregation.unavailable(stored, self._indexes[2])

    # ------------------------------------------------------------ primitives
    def _bump(self):
        self.rv += 1
        return str(self.rv)

    def _find(self, rt, ns, name):
        return self.objects[rt.key].get((ns or "", name))

    def _ctx(self, rt):
        hit = self._ctxs.get(id(rt))
        if hit is None or hit[0] is not rt:  # contexts are immutable: one per served type
            hit = self._ctxs[id(rt)] = (rt, Root(rt.schema, custom=rt.crd is not None))
        return hit[1]

    def _namespace(self, name):
        return self.objects[("", "namespaces")].get(("", name))

    def _emit(self, etype, rt, obj):
        # stored objects are never modified in place (writes store new objects), so events share them
        self.events.append((self.rv, etype, rt.key, obj))
        self.changed.notify_all()

    def _store(self, rt, obj, etype):
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        old = self.objects[rt.key].get(key)
        if old is not None:
            for ref in old["metadata"].get("ownerReferences") or []:
                self.dependents[ref.get("uid")].discard((rt.key, key))
        self.objects[rt.key][key] = obj
        self.in_namespace[(rt.key, key[0])][key] = obj
        self.by_uid[meta["uid"]] = (rt, key)
        for ref in meta.get("ownerReferences") or []:
            self.dependents[ref.get("uid")].add((rt.key, key))
        self._emit(etype, rt, obj)

    def _remove(self, rt, obj):
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        self.objects[rt.key].pop(key, None)
        self.in_namespace[(rt.key, key[0])].pop(key, None)
        self.by_uid.pop(meta["uid"], None)
        for ref in meta.get("ownerReferences") or []:
            self.dependents[ref.get("uid")].discard((rt.key, key))
        self._bump()
        gone = dict(obj)
        gone["metadata"] = dict(obj["metadata"])
        gone["metadata"]["resourceVersion"] = str(self.rv)
        self._emit("DELETED", rt, gone)
        self.controllers.removed(rt, obj)

    def lookup_uid(self, uid):
        """(type, stored object) for a uid, or None."""
        hit = self.by_uid.get(uid)
        if hit is None:
            return None
        rt, key = hit
        obj = self.objects[rt.key].get(key)
        return (rt, obj) if obj is not None else None

    def dependents_of(self, uid):
        """(type, object) pairs whose ownerReferences name ``uid``."""
        out = []
        for tkey, key in sorted(self.dependents.get(uid, ())):
            obj = self.objects[tkey].get(key)
            rt = self._type_for_key(tkey)
            if obj is not None and rt is not None:
                out.append((rt, obj))
        return out

    def _type_for_key(self, tkey):
        return self._by_key.get(tkey)

    def render(self, rt, obj):
        """Copy of a stored object as served by ``rt``'s version."""
        out = deep(obj)
        out["apiVersion"] = rt.api_version
        return out

    @staticmethod
    def view(rt, obj):
        """A stored object as served by ``rt``'s version, sharing its content: only to be serialized (or
        read), never modified; stays valid after the lock is released since stored objects are replaced,
        never changed in place."""
        if obj.get("apiVersion") == rt.api_version:
            return obj
        out = dict(obj)
        out["apiVersion"] = rt.api_version
        return out

    # ----------------------------------------------------------------- reads
    def get(self, rt, ns, name, shared=False):
        """GET one object: a copy, or with ``shared`` a :meth:`view` (to serialize, never to modify)."""
        with self.lock:
            obj = self._find(rt, ns, name)
            if obj is None:
                raise errors.not_found(rt, name)
            return self.view(rt, obj) if shared else self.render(rt, obj)

    def list(self, rt, ns, label_selector="", field_selector="", limit=0, cont=""):
        """LIST with selectors and pagination; returns the list object. Its items share the stored
        objects' content (see :meth:`view`): serialize or read them, never modify them."""
        labels = parse_label_selector(label_selector)
        fsel = parse_field_selector(field_selector, rt.kind)
        with self.lock:
            start, rv = self._decode_continue(cont)
            items = []
            store = self.objects[rt.key]  # (also creates the type's entry, which orders dump())
            if ns:
                store = self.in_namespace.get((rt.key, ns), {})
            for key in sorted(store):
                if start is not None and "/".join(key) <= start:
                    continue
                obj = store[key]
                if label_match(obj["metadata"].get("labels"), labels) and field_match(obj, fsel):
                    items.append((key, obj))
            meta = {"resourceVersion": str(rv or self.rv)}
            if limit and len(items) > limit:
                last = items[limit - 1][0]
                meta["continue"] = self._encode_continue("/".join(last), rv or self.rv)
                if not labels and not fsel:
                    meta["remainingItemCount"] = len(items) - limit
                items = items[:limit]
            if rt.crd is None:  # built-in list items come without kind/apiVersion
                rendered = [{k: v for k, v in obj.items() if k != "apiVersion" and k != "kind"} for _, obj in items]
            else:
                rendered = [self.view(rt, obj) for _, obj in items]
            return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": rendered}

    @staticmethod
    def _encode_continue(start, rv):
        raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"}, separators=(",", ":"))
        return base64.b64encode(raw.encode()).decode()

    @staticmethod
    def _decode_continue(token):
        if not token:
            return None, None
        try:
            data = json.loads(base64.b64decode(token))
            return data["start"].rstrip("\x00"), int(data["rv"])
        except (ValueError, KeyError, TypeError) as exc:
            raise errors.bad_request(f"continue key is not valid: {exc}") from exc

    # ---------------------------------------------------------------- writes
    def _check_namespace(self, rt, ns, name, creating):
        if not rt.namespaced:
            return
        nso = self._namespace(ns)
        if nso is None:
            raise errors.namespace_not_found(ns)
        if creating and nso["metadata"].get("deletionTimestamp"):
            raise errors.namespace_terminating(rt, name, ns)

    def _prepare_body(self, rt, ns, body, name=None, given=False):
        """The object to store for a request body (a copy; ``given``: the body itself, a new object of plain
        JSON values that nothing else refers to)."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request was in an unknown format - accepted media types include: "
                                     "application/json, application/yaml, application/vnd.kubernetes.protobuf")
        check_types(body)
        obj = body if given else deep(body)
        if obj.get("kind") and obj["kind"] != rt.kind:
            raise errors.bad_request(f"the API version in the data ({obj.get('apiVersion')}) does not match the expected API version "
                                     f"({rt.api_version})" if obj.get("apiVersion") != rt.api_version else
                                     f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: no kind "{obj["kind"]}" is '
                                     f'registered for version "{rt.api_version}"')
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version
        meta = obj.setdefault("metadata", {})
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if name is not None and meta.get("name") and meta["name"] != name:
            raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
        if name is not None:
            meta["name"] = name
        return obj

    def create(self, rt, ns, body, manager, dry_run=False, subresource=None):
        """POST: create an object; returns the created object (like every write's answer, a :meth:`view`)."""
        with self.lock:
            obj = self._prepare_body(rt, ns, body)
            meta = obj["metadata"]
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + random_suffix()
            validate(obj, rt)
            self._check_namespace(rt, ns, meta["name"], True)
            if self._find(rt, ns, meta["name"]) is not None:
                raise errors.already_exists(rt, meta["name"])
            return self._insert(rt, obj, manager, dry_run, fields_set=None, admit=subresource is None)

    def _insert(self, rt, obj, manager, dry_run, fields_set, operation="Update", admit=False):
        """Store a new object (``admit``: a client's write, which validating admission sees)."""
        meta = obj["metadata"]
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now()
        if rt.kind in GENERATION_KINDS or rt.crd:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if "status" in rt.subresources and rt.kind != "Namespace":
            obj.pop("status", None)
        apply_defaults(obj, None, operation == "Apply", rt.crd is not None, rt.schema)
        prepare_for_create(obj)
        validate(obj, rt)
        if admit:
            self.admission.admit(rt, None, obj)
        if fields_set is None:
            changed, _ = fields.compare(_skeleton(rt, {}), _skeleton(rt, obj), self._ctx(rt))
            fields_set = fields.strip(changed, "status" in rt.subresources) - _UNTRACKED.get(rt.kind, set())
        finish_create(obj, meta["uid"])
        allocate_cluster_ip(obj, self._alloc_ip, dry_run, creating=True)
        allocate_node_ports(obj, self._alloc_node_port)
        meta.pop("managedFields", None)
        if fields_set:
            meta["managedFields"] = [_entry(manager, operation, rt.api_version, fields_set, None)]
        if dry_run:
            return self.view(rt, obj)
        meta["resourceVersion"] = self._bump()
        self._store(rt, obj, "ADDED")
        self.controllers.written(rt, None, obj)
        return self.view(rt, self._find(rt, meta.get("namespace"), meta["name"]))

    def update(self, rt, ns, name, body, manager, dry_run=False, subresource=None):
        """PUT: replace an object (optimistic concurrency on metadata.resourceVersion)."""
        with self.lock:
            obj = self._prepare_body(rt, ns, body, name)
            old = self._find(rt, ns, name)
            if old is None:
                if rt.key in CREATE_ON_UPDATE and subresource is None:
                    self._check_namespace(rt, ns, name, True)
                    validate(obj, rt)
                    return self._insert(rt, obj, manager, dry_run, None, admit=True), 201
                raise errors.not_found(rt, name)
            want = obj["metadata"].get("resourceVersion")
            if want and want != old["metadata"]["resourceVersion"]:
                raise errors.conflict(rt, name)
            return self._write(rt, old, obj, manager, dry_run, subresource, admit=True), 200

    def patch(self, rt, ns, name, ptype, body, manager, dry_run=False, subresource=None, force=False, validation="Warn", warnings=None):
        """PATCH (json, merge, strategic or apply); returns (object, status code). Undeclared fields in the result
        of a json/merge/strategic patch are dropped per ``validation`` (``fieldValidation``), their warnings
        appended to ``warnings``."""
        with self.lock:
            if ptype == "apply":
                return self._apply(rt, ns, name, body, manager, force, dry_run, subresource)
            old = self._find(rt, ns, name)
            if old is None:
                raise errors.not_found(rt, name)
            current = self.view(rt, old)  # the patch functions build new values (sharing what they leave alone)
            if ptype == "json":
                new = json_patch(current, body)
            elif ptype == "merge":
                new = merge_patch(current, body)
            else:
                if rt.crd is not None:
                    raise errors.ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types "
                                          "include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
                new = strategic_merge_patch(current, body, self._ctx(rt))
            copied = subresource is None and isinstance(new, dict)
            if copied:
                new = deep(new)  # the patch functions share what they leave alone with the stored object
                found = strip_unknown(new, rt, validation, patched=True)
                if warnings is not None:
                    warnings += found
            obj = self._prepare_body(rt, ns, new, name, given=copied)
            want = obj["metadata"].get("resourceVersion")
            if want and want != old["metadata"]["resourceVersion"]:
                raise errors.conflict(rt, name)
            return self._write(rt, old, obj, manager, dry_run, subresource, admit=True), 200

    def _write(self, rt, old, obj, manager, dry_run, subresource, apply_sets=None, admit=False):
        """Common update path: immutables, status handling, defaults, managed fields, generation, store
        (``admit``: a client's write, which validating admission sees unless it is of a subresource)."""
        meta, ometa = obj["metadata"], old["metadata"]
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "namespace", "name"):
            if k in ometa:
                meta[k] = ometa[k]
            else:
                meta.pop(k, None)
        meta["resourceVersion"] = ometa["resourceVersion"]
        has_status = "status" in rt.subresources
        if subresource == "status":
            # a copy of old (in its key order) but for metadata and status, set just below
            restored = {k: None if k == "metadata" or k == "status" else deep(v) for k, v in old.items()}
            restored["status"] = obj.get("status")
            if restored["status"] is None:
                restored.pop("status")
            restored["metadata"] = meta
            obj = restored
        elif has_status and rt.kind != "Namespace":
            if "status" in old:
                obj["status"] = deep(old["status"])
            else:
                obj.pop("status", None)
        carry_allocated(old, obj)
        apply_defaults(obj, self._alloc_ip, apply_sets is not None, rt.crd is not None, rt.schema)
        validate(obj, rt, old if subresource is None else None)
        if ometa.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(ometa.get("finalizers") or [])
            if added:
                why = "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers " + json.dumps(sorted(added))
                raise errors.invalid(rt.kind, meta["name"], [("metadata.finalizers", "FieldValueForbidden", why)], rt.group or None)
        self._update_managed(rt, old, obj, manager, subresource, apply_sets)
        prepare_for_update(old, obj)
        allocate_node_ports(obj, self._alloc_node_port)
        if admit and subresource is None:
            self.admission.admit(rt, old, obj)
        if _same(old, obj):
            return self.view(rt, old)
        if "generation" in ometa and _spec_changed(old, obj):
            meta["generation"] = ometa["generation"] + 1
        if dry_run:
            return self.view(rt, obj)
        if ometa.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(rt, obj)
            return self.view(rt, obj)
        meta["resourceVersion"] = self._bump()
        self._store(rt, obj, "MODIFIED")
        self.controllers.written(rt, old, obj)
        return self.view(rt, self._find(rt, meta.get("namespace"), meta["name"]) or obj)

    def _update_managed(self, rt, old, obj, manager, subresource, apply_sets):
        """Recompute metadata.managedFields for an Update (or install precomputed Apply sets)."""
        if apply_sets is not None:
            entries = apply_sets
        else:
            base = old["metadata"].get("managedFields") or []
            given = obj["metadata"].get("managedFields")
            decoded = self._decoded
            if given is not None and given != base:
                base, decoded = given, None
            entries = _decode_entries(base, decoded)
            if subresource == "scale" and not any(REPLICAS_PATH in e["set"] for e in entries.values()):
                # kube-apiserver's scale handler gives the Scale only the owners of replicas: with none, the Scale
                # is an untracked object and its update records nothing (a kubectl scale or an HPA then owns nothing)
                _encode_entries(obj, entries)
                return
            ctx = self._ctx(rt)
            changed, removed = fields.compare(_skeleton(rt, old), _skeleton(rt, obj), ctx)
            drop_status = "status" in rt.subresources and subresource != "status"
            changed, removed = fields.strip(changed, drop_status), fields.strip(removed, drop_status)
            me = (manager, "Update", subresource)
            if changed or me in entries:
                for ident, entry in entries.items():
                    if ident != me:
                        entry["set"] -= changed | removed
                mine = entries.setdefault(me, {"apiVersion": rt.api_version, "set": set(), "time": now()})
                if changed - mine["set"] or changed:
                    mine["time"] = now()
                mine["set"] = (mine["set"] | changed) - removed
                mine["apiVersion"] = rt.api_version
            else:
                for entry in entries.values():
                    entry["set"] -= removed
        _encode_entries(obj, entries)

    # ----------------------------------------------------------------- apply
    def _apply(self, rt, ns, name, body, manager, force, dry_run, subresource):
        if not manager:
            raise errors.invalid("PatchOptions", None, [("fieldManager", "FieldValueRequired", "Required value: is required for apply patch")],
                                 "meta.k8s.io")
        if not isinstance(body, dict):
            raise errors.bad_request("error decoding YAML: the body is not a YAML/JSON object")
        if not body.get("apiVersion") or not body.get("kind"):
            missing = "Kind" if not body.get("kind") else "apiVersion"
            raise errors.bad_request(f"invalid object type: /, Kind= / Object '{missing}' is missing in '{json.dumps(body)}'")
        if body["apiVersion"] != rt.api_version or body["kind"] != rt.kind:
            raise errors.bad_request(f"the API version in the data ({body['apiVersion']}) does not match the expected API version "
                                     f"({rt.api_version})" if body["apiVersion"] != rt.api_version else
                                     f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: no kind "{body["kind"]}" '
                                     f'is registered for version "{rt.api_version}"')
        ctx = self._ctx(rt)
        check_apply(body, rt, ctx, (body.get("metadata") or {}).get("namespace") if isinstance(body.get("metadata"), dict) else None, name)
        config = self._prepare_body(rt, ns, body, name)
        drop_status = "status" in rt.subresources and subresource != "status"
        cfg = dict(config)  # only read (collect) and copied from (merge)
        if drop_status:
            cfg.pop("status", None)
        applied = fields.strip(fields.collect(cfg, ctx), drop_status)
        me = (manager, "Apply", subresource)
        live = self._find(rt, ns, name)
        if live is None:
            if subresource:
                raise errors.not_found(rt, name)
            self._check_namespace(rt, ns, name, True)
            validate(config, rt)
            return self._insert(rt, config, manager, dry_run, applied, "Apply", admit=subresource is None), 201
        want = config["metadata"].get("resourceVersion")
        if want and want != live["metadata"]["resourceVersion"]:
            raise errors.conflict(rt, name)
        entries = _decode_entries(live["metadata"].get("managedFields") or [], self._decoded)
        if not entries:
            # an object no one owns anything of (created without tracked fields, or managedFields cleared): like the
            # real server, the first apply gives every field it has to "before-first-apply" (an Update entry)
            owned, _ = fields.compare(_skeleton(rt, {}), _skeleton(rt, live), ctx)
            owned = fields.strip(owned, "status" in rt.subresources)
            if owned:
                entries[("before-first-apply", "Update", None)] = {"apiVersion": rt.api_version, "set": owned, "time": now()}
        merged = fields.merge(_merge_base(live, drop_status and rt.kind != "Namespace"), cfg, ctx)
        changed, nulled = fields.compare(live, merged, ctx)
        changed |= nulled & applied  # a field the configuration sets to null (it is removed)
        conflicts = []
        for ident, entry in entries.items():
            if ident[0] == manager:
                continue
            hit = changed & entry["set"] & applied
            if hit and not force:
                conflicts += [(fields.format_path(p), ident[0], entry["apiVersion"]) for p in sorted(hit)]
            entry["set"] -= hit
        if conflicts:
            raise errors.apply_conflict(conflicts)
        previous = entries.get(me, {}).get("set", set())
        others = set().union(*(e["set"] for i, e in entries.items() if i != me)) if entries else set()
        removed = []
        for path in sorted(previous - applied, key=len):  # a removed list item takes its fields with it
            if any(path[:len(r)] == r for r in removed) or fields.is_key_field(path):
                continue
            if not fields.owned_within(path, others | applied):
                fields.remove_path(merged, path, ctx)
                removed.append(path)
        entries[me] = {"apiVersion": rt.api_version, "set": applied, "time": entries.get(me, {}).get("time") or now(),
                       "encoded": entries.get(me, {}).get("encoded")}
        if previous != applied or changed:
            entries[me]["time"] = now()
        merged["metadata"]["managedFields"] = live["metadata"].get("managedFields")
        return self._write(rt, live, merged, manager, dry_run, subresource, apply_sets=entries, admit=True), 200

    # ---------------------------------------------------------------- delete
    def delete(self, rt, ns, name, propagation=None, dry_run=False, preconditions=None):
        """DELETE one object; returns (body, code): the object while finalizers hold it, else a Status."""
        with self.lock:
            obj = self._find(rt, ns, name)
            if obj is None:
                raise errors.not_found(rt, name)
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
                raise errors.conflict(rt, name, f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {obj['metadata']['uid']}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise errors.conflict(rt, name, f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                                      f"ResourceVersion in object meta: {obj['metadata']['resourceVersion']}")
            if rt.kind == "Namespace" and name in IMMORTAL_NAMESPACES:
                raise errors.ApiError(403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                                      {"name": name, "kind": "namespaces"})
            return self._delete(rt, obj, propagation or "Background", dry_run)

    def _delete(self, rt, obj, propagation, dry_run):
        meta = obj["metadata"]
        success = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                   "details": {"name": meta["name"], "kind": rt.plural, "uid": meta["uid"]}}
        if rt.group:
            success["details"] = {"name": meta["name"], "group": rt.group, "kind": rt.plural, "uid": meta["uid"]}
        finalizers = list(meta.get("finalizers") or [])
        has_dependents = bool(self.dependents.get(meta["uid"]))
        if propagation == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        elif propagation == "Orphan" and has_dependents and "orphan" not in finalizers:
            finalizers.append("orphan")
        held = bool(finalizers) or rt.kind in ("Namespace", "CustomResourceDefinition")
        if dry_run:
            return (self.view(rt, obj), 200) if held else (success, 200)
        if not held:
            self._remove(rt, obj)
            return success, 200
        if meta.get("deletionTimestamp"):
            return self.view(rt, obj), 200
        new = deep(obj)
        new["metadata"]["deletionTimestamp"] = now()
        if rt.kind != "Namespace":
            new["metadata"]["deletionGracePeriodSeconds"] = 0
        if finalizers:
            new["metadata"]["finalizers"] = finalizers
        if "generation" in new["metadata"]:
            new["metadata"]["generation"] += 1
        self.controllers.terminating(rt, new)
        new["metadata"]["resourceVersion"] = self._bump()
        self._store(rt, new, "MODIFIED")
        response = self.view(rt, new)
        self.controllers.deleting(rt, new, propagation)
        return response, 200

    def delete_collection(self, rt, ns, label_selector="", field_selector="", propagation=None, dry_run=False):
        """DELETE on a collection; returns the list of affected objects."""
        with self.lock:
            listed = self.list(rt, ns, label_selector, field_selector)
            for item in listed["items"]:
                obj = self._find(rt, item["metadata"].get("namespace"), item["metadata"]["name"])
                if obj is not None:
                    self._delete(rt, obj, propagation or "Background", dry_run)
            return listed

    def remove_finalizer(self, rt, obj, finalizer):
        """Drop one finalizer from a stored object (as its controller would); removes it when none are left."""
        current = self._find(rt, obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if current is None or finalizer not in (current["metadata"].get("finalizers") or []):
            return
        new = deep(current)
        new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != finalizer]
        if not new["metadata"]["finalizers"]:
            del new["metadata"]["finalizers"]
        self._write(rt, current, new, "kube-controller-manager", False, None)

    def system_write(self, rt, obj, manager="kube-controller-manager", subresource=None):
        """A write by a simulated controller (create if missing, else update). ``obj`` is given away: a new
        object of plain JSON values sharing nothing (it may be stored as it is)."""
        meta = obj["metadata"]
        old = self._find(rt, meta.get("namespace"), meta["name"])
        if old is None:
            return self._insert(rt, self._prepare_body(rt, meta.get("namespace"), obj, given=True), manager, False, None)
        return self._write(rt, old, self._prepare_body(rt, meta.get("namespace"), obj, meta["name"], given=True), manager, False, subresource)

    # ------------------------------------------------------------- watching
    def watch_events(self, since, timeout):
        """Events with resourceVersion > since (blocking up to ``timeout`` seconds for new ones)."""
        with self.lock:
            if len(self.events) == self.events.maxlen and since < self.events[0][0] - 1:
                raise errors.gone(f"too old resource version: {since} ({self.events[0][0] - 1})")
            if not self.events or self.events[-1][0] <= since:
                self.changed.wait(timeout)
            newer = []  # the events are in resourceVersion order: take the newer ones from the end
            for e in reversed(self.events):
                if e[0] <= since:
                    break
                newer.append(e)
            newer.reverse()
            return newer

    # ---------------------------------------------------------------- timers
    def schedule(self, delay, fn):
        """Run ``fn`` under the lock after ``delay`` seconds (on a timer thread)."""
        def run():
            with self.lock:
                fn()
        timer = threading.Timer(delay, run)
        timer.daemon = True
        self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()

    def close(self):
        """Cancel pending timers and wake watchers."""
        for t in self._timers:
            t.cancel()
        with self.lock:
            self.changed.notify_all()

    def _alloc_node_port(self):
        self.next_node_port = 30000 + (self.next_node_port - 30000 + 1) % 2768
        return self.next_node_port

    def _alloc_ip(self):
        self.next_ip += 1
        return f"10.96.{self.next_ip // 250}.{self.next_ip % 250 + 1}"

    def dump(self):
        """Every stored object, grouped by ``group/plural`` (core: ``plural``)."""
        with self.lock:
            out = {}
            for (group, plural), objs in self.objects.items():
                if objs:
                    out[f"{group}/{plural}" if group else plural] = [deep(o) for _, o in sorted(objs.items())]
            return out


def _skeleton(rt, obj):
    """The object with the zero-value structs of its kind filled in (empty dicts / lists).

    Only read (compared) by the callers, so it shares ``obj``'s content: just the maps on the
    skeleton paths are copied before they are filled in."""
    out = dict(obj)
    own = {id(out)}  # the maps of ``out`` that are copies (may be changed)
    for path in (*SKELETONS.get(rt.kind, ()), "metadata"):
        cur = out
        parts = path.split(".")
        for part in parts[:-1]:
            child = cur.get(part)
            if isinstance(child, dict):
                if id(child) not in own:
                    cur[part] = child = dict(child)
                    own.add(id(child))
            elif part not in cur:
                cur[part] = child = {}
                own.add(id(child))
            else:
                child = cur[part]
            cur = child
        last = parts[-1]
        if last.endswith("[]"):
            if isinstance(cur, dict) and not isinstance(cur.get(last[:-2]), list):
                cur[last[:-2]] = []
        elif isinstance(cur, dict) and not isinstance(cur.get(last), dict):
            cur[last] = {}
    return out


def _merge_base(live, status_kept):
    """``live`` for the apply merge, with None in place of the values the write replaces anyway (not worth
    copying): ``metadata.managedFields`` (set from the entries) and, if ``status_kept``, ``status`` (the
    live one is kept). The keys stay where they are, so the merged object keeps the live key order; a
    None member is no change to the merged result's ``changed`` paths (only a removal, which is ignored)."""
    meta = live["metadata"]
    has_managed = "managedFields" in meta
    has_status = status_kept and "status" in live
    if not has_managed and not has_status:
        return live
    base = dict(live)
    if has_managed:
        base["metadata"] = dict(meta)
        base["metadata"]["managedFields"] = None
    if has_status:
        base["status"] = None
    return base


def _managed_without_times(managed):
    if not managed:
        return managed
    return [{k: v for k, v in e.items() if k != "time"} for e in managed]


def _same(old, new):
    """``old == new`` ignoring the times of managedFields entries (without copying either)."""
    if old.keys() != new.keys():
        return False
    for k, v in old.items():
        if k != "metadata" and new[k] != v:
            return False
    om, nm = old["metadata"], new["metadata"]
    if type(om) is not dict or type(nm) is not dict:
        return om == nm
    if om.keys() != nm.keys():
        return False
    for k, v in om.items():
        if k != "managedFields" and nm[k] != v:
            return False
    return _managed_without_times(om.get("managedFields")) == _managed_without_times(nm.get("managedFields"))


def _spec_changed(old, new):
    def body(o):
        return {k: v for k, v in o.items() if k not in ("metadata", "status")}
    return body(old) != body(new) or old["metadata"].get("deletionTimestamp") != new["metadata"].get("deletionTimestamp")


#: the field a ``scale`` subresource writes, as a managedFields path
REPLICAS_PATH = ("f:spec", "f:replicas")


def _decode_entries(managed, decoded=None):
    """Entries by (manager, operation, subresource). With ``decoded`` (a cache: see :func:`_decoded`), of
    the managedFields of a stored object, whose ``fieldsV1`` were all written by :func:`fields.to_fields_v1`:
    an entry whose set ends up unchanged is then encoded by reusing its ``fieldsV1`` (the encoding of a
    decoded encoding is itself)."""
    entries = {}
    for e in managed or []:
        ident = (e.get("manager", ""), e.get("operation", "Update"), e.get("subresource"))
        encoded = e.get("fieldsV1")
        if decoded is not None:
            frozen = _decoded(decoded, encoded)
            entries[ident] = {"apiVersion": e.get("apiVersion", ""), "time": e.get("time"), "set": set(frozen), "encoded": (frozen, encoded)}
        else:
            entries[ident] = {"apiVersion": e.get("apiVersion", ""), "time": e.get("time"), "set": fields.from_fields_v1(encoded)}
    return entries


def _decoded(cache, encoded):
    """The paths of a stored ``fieldsV1`` (as a frozenset), remembered in ``cache`` (id -> (fieldsV1, paths)):
    stored objects, so their fieldsV1, never change, and a write that leaves an entry alone stores the same one."""
    hit = cache.get(id(encoded))
    if hit is not None and hit[0] is encoded:
        return hit[1]
    frozen = frozenset(fields.from_fields_v1(encoded))
    if len(cache) >= 4096:
        cache.clear()
    cache[id(encoded)] = (encoded, frozen)  # (holding fieldsV1 keeps its id from being reused)
    return frozen


def _entry(manager, operation, api_version, paths, subresource, time=None, encoded=None):
    fields_v1 = encoded[1] if encoded is not None and encoded[0] == paths else fields.to_fields_v1(paths)
    entry = {"manager": manager, "operation": operation, "apiVersion": api_version, "time": time or now(), "fieldsType": "FieldsV1",
             "fieldsV1": fields_v1}
    if subresource:
        entry["subresource"] = subresource
    return entry


def _encode_entries(obj, entries):
    managed = [_entry(i[0], i[1], e["apiVersion"], e["set"], i[2], e.get("time"), e.get("encoded")) for i, e in entries.items() if e["set"]]
    if managed:
        obj["metadata"]["managedFields"] = managed
    else:
        obj["metadata"].pop("managedFields", None)


# Fields set by a kind's create strategy rather than by defaulting: never owned by the creator.
_UNTRACKED = {"Namespace": {("f:spec", "f:finalizers"), ("f:spec",)}}

_BOOTSTRAP_ROLES = {
    "cluster-admin": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}],
    "admin": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    "edit": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}],
    "view": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}],
}
