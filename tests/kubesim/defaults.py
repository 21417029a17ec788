"""Server-side defaulting and validation for the built-in kinds the collection touches."""

import base64
import ipaddress
import json
import re

from . import aggregation
from .errors import bad_request, invalid
from .normalise import QuantityError, normalise

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# Kinds whose names must be DNS-1123 labels rather than subdomains.
_LABEL_NAMED = {"Namespace", "Service"}
# Kinds whose names may be any path segment (RBAC).
_PATH_NAMED = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}


def _container_defaults(c):
    image = c.get("image", "")
    tag = image.rsplit("/", 1)[-1]
    if "@" not in image:
        latest = ":" not in tag or tag.endswith(":latest")
        c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    else:
        c.setdefault("imagePullPolicy", "IfNotPresent")
    c.setdefault("resources", {})
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
    for e in c.get("env") or []:
        fr = (e.get("valueFrom") or {}).get("fieldRef") if isinstance(e, dict) else None
        if isinstance(fr, dict):
            fr.setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(c.get(probe), dict):
            _probe_defaults(c[probe])
    for hook in ("postStart", "preStop"):
        handler = (c.get("lifecycle") or {}).get(hook)
        if isinstance(handler, dict) and isinstance(handler.get("httpGet"), dict):
            handler["httpGet"].setdefault("scheme", "HTTP")


def _probe_defaults(probe):
    """SetDefaults_Probe and SetDefaults_HTTPGetAction."""
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    if isinstance(probe.get("httpGet"), dict):
        probe["httpGet"].setdefault("scheme", "HTTP")


def _volume_defaults(v):
    """SetDefaults_*VolumeSource of the volume sources that have defaults."""
    for src in ("configMap", "secret", "projected", "downwardAPI"):
        if isinstance(v.get(src), dict):
            v[src].setdefault("defaultMode", 420)
    if isinstance(v.get("hostPath"), dict):
        v["hostPath"].setdefault("type", "")
    items = list((v.get("downwardAPI") or {}).get("items") or [])
    for source in (v.get("projected") or {}).get("sources") or []:
        if isinstance(source, dict):
            items += (source.get("downwardAPI") or {}).get("items") or []
            token = source.get("serviceAccountToken")
            if isinstance(token, dict):
                token.setdefault("expirationSeconds", 3600)
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("fieldRef"), dict):
            item["fieldRef"].setdefault("apiVersion", "v1")
    if isinstance(v.get("iscsi"), dict):
        v["iscsi"].setdefault("iscsiInterface", "default")
    if isinstance(v.get("rbd"), dict):
        v["rbd"].setdefault("pool", "rbd")
        v["rbd"].setdefault("user", "admin")
        v["rbd"].setdefault("keyring", "/etc/ceph/keyring")


def pod_spec_defaults(spec, restart="Always"):
    """Defaults of a PodSpec (as in a pod template)."""
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _container_defaults(c)
    spec.setdefault("restartPolicy", restart)
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    for v in spec.get("volumes") or []:
        if isinstance(v, dict):
            _volume_defaults(v)


def _template(spec, restart="Always"):
    tpl = spec.setdefault("template", {})
    if isinstance(tpl, dict):
        tpl.setdefault("metadata", {})
        pod_spec_defaults(tpl.setdefault("spec", {}), restart)


def _deployment(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = strategy.setdefault("rollingUpdate", {})
        ru.setdefault("maxSurge", "25%")
        ru.setdefault("maxUnavailable", "25%")
    _template(spec)


def _statefulset(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    us = spec.setdefault("updateStrategy", {})
    us.setdefault("type", "RollingUpdate")
    if us["type"] == "RollingUpdate":
        us.setdefault("rollingUpdate", {"partition": 0})
    for pvc in spec.get("volumeClaimTemplates") or []:
        if isinstance(pvc, dict):
            pvc.setdefault("apiVersion", "v1")
            pvc.setdefault("kind", "PersistentVolumeClaim")
            _pvc(pvc)
    _template(spec)


def _daemonset(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("revisionHistoryLimit", 10)
    us = spec.setdefault("updateStrategy", {})
    us.setdefault("type", "RollingUpdate")
    if us["type"] == "RollingUpdate":
        us.setdefault("rollingUpdate", {"maxSurge": 0, "maxUnavailable": 1})
    _template(spec)


def _replicaset(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    _template(spec)


def _job_spec(spec):
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("completions", 1)
    spec.setdefault("parallelism", 1)
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    _template(spec, "Never")


def _job(obj):
    _job_spec(obj.setdefault("spec", {}))


def _cronjob(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("failedJobsHistoryLimit", 1)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("suspend", False)
    template = spec.setdefault("jobTemplate", {})
    template.setdefault("metadata", {})
    _template(template.setdefault("spec", {}), "Never")


def _pod(obj):
    pod_spec_defaults(obj.setdefault("spec", {}))
    spec = obj["spec"]
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("tolerations", [
        {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
        {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}])
    status = obj.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", "BestEffort")


def _service(obj, alloc_ip):
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        if alloc_ip is not None:  # an update: the registry fills these in before the managed fields are computed
            allocate_cluster_ip(obj, alloc_ip)
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for p in spec.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
            if "targetPort" not in p and "port" in p:
                p["targetPort"] = p["port"]
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["sessionAffinity"] == "ClientIP":
        spec.setdefault("sessionAffinityConfig", {}).setdefault("clientIP", {}).setdefault("timeoutSeconds", 10800)
    obj.setdefault("status", {}).setdefault("loadBalancer", {})


#: the service IP range (kube-apiserver's --service-cluster-ip-range, as ../shared/kube/up sets it)
SERVICE_CIDR = "10.96.0.0/16"


def _in_service_range(ip):
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(SERVICE_CIDR)
    except ValueError:
        return False


def allocate_cluster_ip(obj, alloc_ip, dry_run=False, creating=False):
    """Service registry: cluster IP(s) and IP families (on create set after the creator's managed fields are
    computed, so never owned by an Update-operation creator, like the real registry's allocation)."""
    spec = obj.get("spec")
    if obj.get("kind") != "Service" or not isinstance(spec, dict) or spec.get("type", "ClusterIP") == "ExternalName":
        return
    if "clusterIP" not in spec:
        spec["clusterIP"] = alloc_ip()
    elif creating and spec["clusterIP"] not in ("", "None") and not _in_service_range(spec["clusterIP"]):
        # an update that changes an IP git set is refused as immutable first (the real registry's order)
        ip = spec["clusterIP"]
        # the real registry's words differ: a dry run asks the range, a create the allocator
        why = (f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is {SERVICE_CIDR}" if dry_run
               else "the provided network does not match the current range")
        raise invalid("Service", (obj.get("metadata") or {}).get("name"), [(
            "spec.clusterIPs", "FieldValueInvalid", f"Invalid value: {json.dumps([ip])}: failed to allocate IP {ip}: {why}")])
    spec.setdefault("clusterIPs", [spec["clusterIP"]] if spec["clusterIP"] else [])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")


def allocate_node_ports(obj, alloc_port):
    """Service registry: NodePort / LoadBalancer ports without a nodePort get one (not a default: set after
    managed fields are computed, like the real registry's allocation)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("type") not in ("NodePort", "LoadBalancer"):
        return
    for p in spec.get("ports") or []:
        if isinstance(p, dict) and not p.get("nodePort"):
            p["nodePort"] = alloc_port()


def _namespace(obj):
    name = obj["metadata"].get("name")
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")


def _secret(obj):
    obj.setdefault("type", "Opaque")
    # v1 -> internal conversion: stringData is merged into data (base64) and never stored.
    string_data = obj.pop("stringData", None)
    if string_data:
        data = obj.get("data") or {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data


def _pvc(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("volumeMode", "Filesystem")
    obj.setdefault("status", {}).setdefault("phase", "Pending")


def _pv(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    obj.setdefault("status", {}).setdefault("phase", "Pending")


def _storageclass(obj):
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")


def _networkpolicy(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("podSelector", {})
    if "policyTypes" not in spec:
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    for rule in (spec.get("ingress") or []) + (spec.get("egress") or []):
        for p in (rule.get("ports") or []) if isinstance(rule, dict) else []:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")


def _hpa(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]


def _webhooks(obj, mutating):
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def _match_resources(match):
    if not isinstance(match, dict):
        return
    match.setdefault("matchPolicy", "Equivalent")
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    for rule in [*(match.get("resourceRules") or []), *(match.get("excludeResourceRules") or [])]:
        if isinstance(rule, dict):
            rule.setdefault("scope", "*")


def _admission_policy(obj):
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("failurePolicy", "Fail")
        _match_resources(spec.get("matchConstraints"))


def _policy_binding(obj):
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _match_resources(spec.get("matchResources"))


def _crd(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("conversion", {"strategy": "None"})
    names = spec.get("names") or {}
    if names.get("kind") and "listKind" not in names:
        names["listKind"] = names["kind"] + "List"
    if names.get("plural") and "singular" not in names and names.get("kind"):
        names["singular"] = names["kind"].lower()
    status = obj.setdefault("status", {})
    status.setdefault("acceptedNames", {"kind": "", "plural": ""})
    status.setdefault("conditions", None)
    status.setdefault("storedVersions", [v["name"] for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("storage")])


def _rbac_role(obj):
    if obj.get("rules") == []:
        obj["rules"] = None


_DEFAULTERS = {
    "Deployment": _deployment, "StatefulSet": _statefulset, "DaemonSet": _daemonset, "ReplicaSet": _replicaset,
    "Job": _job, "CronJob": _cronjob, "Pod": _pod, "Namespace": _namespace, "Secret": _secret,
    "PersistentVolumeClaim": _pvc, "PersistentVolume": _pv, "StorageClass": _storageclass, "NetworkPolicy": _networkpolicy,
    "CustomResourceDefinition": _crd, "ClusterRole": _rbac_role, "Role": _rbac_role, "HorizontalPodAutoscaler": _hpa,
    "ValidatingWebhookConfiguration": lambda o: _webhooks(o, False), "MutatingWebhookConfiguration": lambda o: _webhooks(o, True),
    "APIService": aggregation.defaults, "ValidatingAdmissionPolicy": _admission_policy,
    "ValidatingAdmissionPolicyBinding": _policy_binding,
}


def apply_defaults(obj, alloc_ip, apply=False, custom=False, schema=None):
    """Normalise (built-in kinds: see ``normalise.py``) and fill in server defaults in place; ``apply``: the
    object came through server-side apply; ``custom``: a custom resource, defaulted from its CRD's
    structural ``schema`` (``openAPIV3Schema``)."""
    if custom:
        if schema:
            schema_defaults(obj, schema, top=True)
        return
    try:
        normalise(obj, apply)
    except QuantityError as exc:
        kind = obj.get("kind")
        raise bad_request(f'{kind} in version "{(obj.get("apiVersion") or "v1").rpartition("/")[2]}" cannot be handled as a {kind}: {exc}') from exc
    kind = obj.get("kind")
    if kind == "Service":
        _service(obj, alloc_ip)
    elif kind in _DEFAULTERS:
        _DEFAULTERS[kind](obj)


def schema_defaults(value, schema, top=False):
    """Structural-schema defaulting of a custom resource (apiextensions ``structuraldefaulting.Default``):
    an absent property with a ``default`` gets a copy of it, and defaults apply inside defaulted values,
    object properties, ``additionalProperties`` values and array items. ``metadata`` is never defaulted."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name, sub in props.items():
            if top and name in ("metadata", "apiVersion", "kind"):
                continue
            if isinstance(sub, dict) and "default" in sub and value.get(name) is None and not (name in value and sub.get("nullable")):
                value[name] = json.loads(json.dumps(sub["default"]))
        for name, child in value.items():
            if top and name == "metadata":
                continue
            if name in props:
                schema_defaults(child, props[name])
            elif isinstance(schema.get("additionalProperties"), dict):
                schema_defaults(child, schema["additionalProperties"])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            schema_defaults(item, schema["items"])


def prepare_for_create(obj):
    """What the real registries' create strategies set before the managed fields are computed (so owned by
    an Update-operation creator, never by an applier): a DaemonSet's template generation, a Job's
    ``manualSelector`` and its labels copied from its template."""
    kind = obj.get("kind")
    spec = obj.get("spec")
    if kind == "DaemonSet":
        obj["metadata"]["annotations"] = {**(obj["metadata"].get("annotations") or {}), "deprecated.daemonset.template.generation": "1"}
    elif kind == "Job" and isinstance(spec, dict):
        spec.setdefault("manualSelector", False)
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        if not obj["metadata"].get("labels") and labels:
            obj["metadata"]["labels"] = dict(labels)


def finish_create(obj, uid):
    """What is set once the object has its uid (never owned by anyone): a Job's generated selector and the
    labels that go with it, on its template and (when they are the template's, as Go's shared map makes
    them) on the Job."""
    spec = obj.get("spec")
    if obj.get("kind") != "Job" or not isinstance(spec, dict) or spec.get("manualSelector"):
        return
    name = obj["metadata"]["name"]
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name, "controller-uid": uid, "job-name": name}
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    tpl = spec.setdefault("template", {}).setdefault("metadata", {})
    shared = not obj["metadata"].get("labels") or obj["metadata"]["labels"] == (tpl.get("labels") or {})
    tpl["labels"] = {**(tpl.get("labels") or {}), **labels}
    if shared:
        obj["metadata"]["labels"] = dict(tpl["labels"])


def prepare_for_update(old, obj):
    """Update strategies: a DaemonSet's template generation (kept in the annotation, whatever a writer puts
    there) is the old one, plus one when the pod template changed."""
    if obj.get("kind") != "DaemonSet":
        return
    key = "deprecated.daemonset.template.generation"
    try:
        generation = int((old["metadata"].get("annotations") or {}).get(key, "0"))
    except ValueError:
        generation = 0
    if (old.get("spec") or {}).get("template") != (obj.get("spec") or {}).get("template"):
        generation += 1
    if generation:
        obj["metadata"]["annotations"] = {**(obj["metadata"].get("annotations") or {}), key: str(generation)}


def _int_field(obj, path, kind):
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return
        cur = cur.get(p)
    if cur is not None and (not isinstance(cur, int) or isinstance(cur, bool)):
        go = {"Deployment": "DeploymentSpec", "StatefulSet": "StatefulSetSpec", "ReplicaSet": "ReplicaSetSpec"}.get(kind, kind + "Spec")
        what = "string" if isinstance(cur, str) else type(cur).__name__
        raise bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal {what} into Go struct field '
                          f"{go}.{path} of type int32")


def check_types(obj):
    """400 for values that the real server cannot even decode."""
    kind = obj.get("kind")
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        _int_field(obj, "spec.replicas", kind)
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal into Go struct field {kind}.metadata')
    for key in ("labels", "annotations"):
        val = (meta or {}).get(key)
        if isinstance(val, dict) and any(not isinstance(v, str) for v in val.values()):
            raise bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal number into Go struct field '
                              f"ObjectMeta.metadata.{key} of type string")
    if kind in ("ConfigMap", "Secret"):
        for key in ("data", "stringData"):
            val = obj.get(key)
            if isinstance(val, dict) and any(not isinstance(v, str) for v in val.values()):
                raise bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal number into Go struct field '
                                  f"{kind}.{key} of type string")


def _name_causes(kind, name, generate):
    if not name:
        return [] if generate else [("metadata.name", "FieldValueRequired", "Required value: name or generateName is required")]
    if kind in _PATH_NAMED:
        if name in (".", "..") or "/" in name or "%" in name:
            return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": may not contain \'/\'')]
        return []
    if kind in _LABEL_NAMED:
        if len(name) > 63 or not _DNS1123_LABEL.match(name):
            return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case '
                     "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
                     "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]
        return []
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                 "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]
    return []


def _label_causes(meta):
    causes = []
    for key, value in (meta.get("labels") or {}).items():
        name = key.rsplit("/", 1)[-1]
        if not name or len(name) > 63 or not _LABEL_NAME.match(name):
            causes.append(("metadata.labels", "FieldValueInvalid", f'Invalid value: "{key}": name part must consist of alphanumeric characters, '
                           "'-', '_' or '.', and must start and end with an alphanumeric character"))
        if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
            causes.append(("metadata.labels", "FieldValueInvalid", f'Invalid value: "{value}": a valid label must be an empty string or '
                           "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"))
    return causes


def _selector_matches(selector, labels):
    ml = (selector or {}).get("matchLabels") or {}
    return all((labels or {}).get(k) == v for k, v in ml.items())


def _workload_causes(obj):
    spec = obj.get("spec") or {}
    causes = []
    kind = obj["kind"]
    template = spec.get("template") or {}
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
        sel = spec.get("selector")
        if not sel:
            causes.append(("spec.selector", "FieldValueRequired", "Required value"))
        elif not _selector_matches(sel, (template.get("metadata") or {}).get("labels")):
            labels = (template.get("metadata") or {}).get("labels") or {}
            causes.append(("spec.template.metadata.labels", "FieldValueInvalid",
                           f"Invalid value: {_go_map(labels)}: `selector` does not match template `labels`"))
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        causes += _containers_causes((template.get("spec") or {}), "spec.template.spec")
    if kind == "Pod":
        causes += _containers_causes(spec, "spec")
    return causes


def _go_map(labels):
    """A map[string]string as the real server prints it in field errors (JSON, sorted keys)."""
    return json.dumps(labels or {}, sort_keys=True, separators=(",", ":"))


def _go_selector(sel):
    """A metav1.LabelSelector as JSON in Go field order (matchLabels, matchExpressions; omitempty)."""
    sel = sel or {}
    parts = []
    if sel.get("matchLabels"):
        parts.append('"matchLabels":' + _go_map(sel["matchLabels"]))
    if sel.get("matchExpressions"):
        exprs = []
        for e in sel["matchExpressions"]:
            item = [f'"key":{json.dumps(e.get("key", ""))}', f'"operator":{json.dumps(e.get("operator", ""))}']
            if e.get("values"):
                item.append('"values":' + json.dumps(list(e["values"]), separators=(",", ":")))
            exprs.append("{" + ",".join(item) + "}")
        parts.append('"matchExpressions":[' + ",".join(exprs) + "]")
    return "{" + ",".join(parts) + "}"


def _same_selector(a, b):
    a, b = a or {}, b or {}
    return ((a.get("matchLabels") or {}) == (b.get("matchLabels") or {})
            and (a.get("matchExpressions") or []) == (b.get("matchExpressions") or []))


_FROZEN = "Forbidden: field is immutable when `immutable` is set"
# apps/v1 kinds whose spec.selector is immutable (StatefulSet refuses most spec changes differently).
_SELECTOR_IMMUTABLE = {"Deployment", "ReplicaSet", "DaemonSet"}
# the StatefulSet spec fields an update may change (ValidateStatefulSetUpdate); any other change is refused whole
_STS_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy", "minReadySeconds")
_STS_FORBIDDEN = ("Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                  "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
                  "'minReadySeconds' are forbidden")


def carry_allocated(old, obj):
    """Service update: keep the allocated clusterIP when the new object leaves it empty (like the real
    registry) and follow a changed clusterIP into clusterIPs (normalizeClusterIPs)."""
    if obj.get("kind") != "Service":
        return
    ospec, spec = old.get("spec") or {}, obj.get("spec")
    if not isinstance(spec, dict) or "ExternalName" in (ospec.get("type"), spec.get("type")):
        return
    if spec.get("type") in ("NodePort", "LoadBalancer"):  # allocated node ports stay with their port
        allocated = {(p.get("port"), p.get("protocol") or "TCP"): p["nodePort"] for p in ospec.get("ports") or []
                     if isinstance(p, dict) and p.get("nodePort")}
        for p in spec.get("ports") or []:
            if isinstance(p, dict) and not p.get("nodePort") and (p.get("port"), p.get("protocol") or "TCP") in allocated:
                p["nodePort"] = allocated[(p.get("port"), p.get("protocol") or "TCP")]
    if not spec.get("clusterIP") and ospec.get("clusterIP"):
        spec["clusterIP"] = ospec["clusterIP"]
        if not spec.get("clusterIPs"):
            spec["clusterIPs"] = list(ospec.get("clusterIPs") or [ospec["clusterIP"]])
    else:
        moved = spec.get("clusterIP") != ospec.get("clusterIP") and spec.get("clusterIPs") == ospec.get("clusterIPs")
        if moved or (spec.get("clusterIP") and not spec.get("clusterIPs")):
            spec["clusterIPs"] = [spec["clusterIP"]]


def _immutable_causes(old, obj, kind):
    """Update-only validation of immutable fields (kube-apiserver v1.36 messages)."""
    causes = []
    if kind == "Secret" and (obj.get("type") or "Opaque") != (old.get("type") or "Opaque"):
        causes.append(("type", "FieldValueInvalid", f"Invalid value: {json.dumps(obj.get('type') or '')}: field is immutable"))
    if kind in ("ConfigMap", "Secret") and old.get("immutable") is True:
        if obj.get("immutable") is not True:
            causes.append(("immutable", "FieldValueForbidden", _FROZEN))
        for key in ("data", "binaryData") if kind == "ConfigMap" else ("data",):
            if (obj.get(key) or {}) != (old.get(key) or {}):
                causes.append((key, "FieldValueForbidden", _FROZEN))
    if kind in ("RoleBinding", "ClusterRoleBinding") and (obj.get("roleRef") or {}) != (old.get("roleRef") or {}):
        ref = obj.get("roleRef") or {}
        shown = json.dumps({"APIGroup": ref.get("apiGroup", ""), "Kind": ref.get("kind", ""), "Name": ref.get("name", "")},
                           separators=(",", ":"))
        causes.append(("roleRef", "FieldValueInvalid", f"Invalid value: {shown}: cannot change roleRef"))
    if kind == "Service":
        ospec, spec = old.get("spec") or {}, obj.get("spec") or {}
        if "ExternalName" not in (ospec.get("type"), spec.get("type")) and ospec.get("clusterIPs"):
            ips = spec.get("clusterIPs") or []
            if ips and ips[0] != spec.get("clusterIP"):
                causes.append(("spec.clusterIPs", "FieldValueInvalid",
                               f"Invalid value: {json.dumps(ips, separators=(',', ':'))}: first value must match `clusterIP`"))
            elif ips[:1] != ospec["clusterIPs"][:1]:
                causes.append(("spec.clusterIPs[0]", "FieldValueInvalid",
                               f"Invalid value: {json.dumps(ips, separators=(',', ':'))}: may not change once set"))
    return causes


def _selector_causes(old, obj):
    sel, osel = (obj.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector")
    if osel and sel and not _same_selector(sel, osel):
        return [("spec.selector", "FieldValueInvalid", f"Invalid value: {_go_selector(sel)}: field is immutable")]
    return []


def _statefulset_causes(old, obj):
    """A StatefulSet update that changes a spec field other than :data:`_STS_MUTABLE` (compared defaulted)."""
    def frozen(o):
        return {k: v for k, v in (o.get("spec") or {}).items() if k not in _STS_MUTABLE}
    return [("spec", "FieldValueForbidden", _STS_FORBIDDEN)] if frozen(obj) != frozen(old) else []


def _containers_causes(pod_spec, prefix):
    containers = pod_spec.get("containers")
    if not containers:
        return [(f"{prefix}.containers", "FieldValueRequired", "Required value")]
    causes = []
    for i, c in enumerate(containers):
        if not c.get("name"):
            causes.append((f"{prefix}.containers[{i}].name", "FieldValueRequired", "Required value"))
        if not c.get("image"):
            causes.append((f"{prefix}.containers[{i}].image", "FieldValueRequired", "Required value"))
    return causes


def _crd_causes(obj):
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    causes = []
    name = obj["metadata"].get("name", "")
    if not spec.get("group"):
        causes.append(("spec.group", "FieldValueRequired", "Required value"))
    if not names.get("plural"):
        causes.append(("spec.names.plural", "FieldValueRequired", "Required value"))
    if not names.get("kind"):
        causes.append(("spec.names.kind", "FieldValueRequired", "Required value"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(("spec.scope", "FieldValueNotSupported", f'Unsupported value: "{spec.get("scope", "")}": supported values: "Cluster", "Namespaced"'))
    if names.get("plural") and spec.get("group") and name != f"{names['plural']}.{spec['group']}":
        causes.append(("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group'))
    versions = spec.get("versions") or []
    if not versions:
        causes.append(("spec.versions", "FieldValueInvalid", "Invalid value: \"null\": must have exactly one version marked as storage version"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(("spec.versions", "FieldValueInvalid", "Invalid value: ...: must have exactly one version marked as storage version"))
    return causes


def _webhook_causes(obj):
    """admissionregistration/v1 allows only webhooks without side effects on dry runs (v1beta1's Some / Unknown are
    gone): a dry run is therefore never refused by a webhook for its side effects."""
    causes = []
    for i, wh in enumerate(obj.get("webhooks") or []):
        value = wh.get("sideEffects")
        if value is None:
            causes.append((f"webhooks[{i}].sideEffects", "FieldValueRequired", 'Required value: must specify one of None, NoneOnDryRun'))
        elif value not in ("None", "NoneOnDryRun"):
            causes.append((f"webhooks[{i}].sideEffects", "FieldValueNotSupported",
                           f'Unsupported value: "{value}": supported values: "None", "NoneOnDryRun"'))
    return causes


def validate(obj, rt, old=None):
    """Raise 422 Invalid with causes for objects the real server would reject (``old``: the live object
    on updates, for immutable fields; the order of causes follows the real validators)."""
    meta = obj.get("metadata") or {}
    kind = rt.kind
    causes = aggregation.name_causes(obj) if kind == "APIService" else _name_causes(kind, meta.get("name"), meta.get("generateName"))
    causes += _label_causes(meta)
    if old is not None:
        causes += _immutable_causes(old, obj, kind)
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "Pod"):
        causes += _workload_causes(obj)
    if kind == "CustomResourceDefinition":
        causes += _crd_causes(obj)
    if kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        causes += _webhook_causes(obj)
    if kind in ("ConfigMap", "Secret"):
        for key in ("data", "binaryData", "stringData"):
            for k in obj.get(key) or {}:
                if not re.match(r"^[-._a-zA-Z0-9]+$", k):
                    why = f"Invalid value: \"{k}\": a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
                    causes.append((f"{key}[{k}]", "FieldValueInvalid", why))
    if old is not None and kind in _SELECTOR_IMMUTABLE and rt.group == "apps":
        causes += _selector_causes(old, obj)
    if old is not None and kind == "StatefulSet" and rt.group == "apps":
        causes += _statefulset_causes(old, obj)
    if causes:
        raise invalid(kind, meta.get("name"), causes, rt.group or None)
