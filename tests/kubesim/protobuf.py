"""Request bodies in Kubernetes' protobuf encoding (``application/vnd.kubernetes.protobuf``), as
kubectl's typed clients send them (``kubectl create configmap|secret|namespace|serviceaccount|service|
deployment|role|clusterrole|rolebinding|clusterrolebinding|job|cronjob``, ``kubectl auth whoami``).

A body is the 4-byte magic ``k8s\\x00`` and a ``runtime.Unknown`` message (``typeMeta``, ``raw``: the
object's message). The object's message is read with a small protobuf wire-format reader and turned
into the object's JSON form with field-number tables of the kinds above (the numbers of k8s.io/api's
``generated.proto``); the result then goes through the simulator's usual decoding (normalisation and
defaults) like a JSON body. Go's protobuf encoding writes non-pointer fields even when they hold their
zero value, so zero scalars of fields not marked optional (``?``) here are dropped, as the server's
JSON encoding of the decoded Go struct would (``omitempty``).
"""

import base64
import datetime
import struct

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf message the simulator can read."""


# Field tables: message -> {number: (json name, type)}. A type is a scalar ("string", "bytes", "int32",
# "int64", "bool"), a message name, "[]" + either for repeated fields, "map:<value type>" for
# map<string, value>; a trailing "?" marks pointer fields and "!" fields without omitempty (their zero
# values are kept). "Ignored": read and dropped (a status); "Unsupported": a 400 asking for JSON.
MESSAGES = {
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes"), 3: ("contentEncoding", "string"), 4: ("contentType", "string")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    "ObjectMeta": {1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"), 4: ("selfLink", "string"),
                   5: ("uid", "string"), 6: ("resourceVersion", "string"), 7: ("generation", "int64"), 8: ("creationTimestamp", "Time"),
                   9: ("deletionTimestamp", "Time?"), 10: ("deletionGracePeriodSeconds", "int64?"), 11: ("labels", "map:string"),
                   12: ("annotations", "map:string"), 13: ("ownerReferences", "[]OwnerReference"), 14: ("finalizers", "[]string")},
    "OwnerReference": {1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"), 5: ("apiVersion", "string"),
                       6: ("controller", "bool?"), 7: ("blockOwnerDeletion", "bool?")},
    "Time": {1: ("seconds", "int64"), 2: ("nanos", "int32")},
    "Quantity": {1: ("string", "string")},
    "IntOrString": {1: ("type", "int64"), 2: ("intVal", "int32"), 3: ("strVal", "string")},
    "LabelSelector": {1: ("matchLabels", "map:string"), 2: ("matchExpressions", "[]LabelSelectorRequirement")},
    "LabelSelectorRequirement": {1: ("key", "string"), 2: ("operator", "string"), 3: ("values", "[]string")},
    # core/v1
    "ConfigMap": {1: ("metadata", "ObjectMeta"), 2: ("data", "map:string"), 3: ("binaryData", "map:bytes"), 4: ("immutable", "bool?")},
    "Secret": {1: ("metadata", "ObjectMeta"), 2: ("data", "map:bytes"), 3: ("type", "string"), 4: ("stringData", "map:string"),
               5: ("immutable", "bool?")},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec"), 3: ("status", "NamespaceStatus")},
    "NamespaceSpec": {1: ("finalizers", "[]string")},
    "NamespaceStatus": {1: ("phase", "string")},
    "ServiceAccount": {1: ("metadata", "ObjectMeta"), 2: ("secrets", "[]ObjectReference"), 3: ("imagePullSecrets", "[]LocalObjectReference"),
                       4: ("automountServiceAccountToken", "bool?")},
    "ObjectReference": {1: ("kind", "string"), 2: ("namespace", "string"), 3: ("name", "string"), 4: ("uid", "string"),
                        5: ("apiVersion", "string"), 6: ("resourceVersion", "string"), 7: ("fieldPath", "string")},
    "LocalObjectReference": {1: ("name", "string")},
    "Service": {1: ("metadata", "ObjectMeta"), 2: ("spec", "ServiceSpec"), 3: ("status", "Ignored")},
    "ServiceSpec": {1: ("ports", "[]ServicePort"), 2: ("selector", "map:string"), 3: ("clusterIP", "string"), 4: ("type", "string"),
                    5: ("externalIPs", "[]string"), 7: ("sessionAffinity", "string"), 8: ("loadBalancerIP", "string"),
                    9: ("loadBalancerSourceRanges", "[]string"), 10: ("externalName", "string"), 11: ("externalTrafficPolicy", "string"),
                    12: ("healthCheckNodePort", "int32"), 13: ("publishNotReadyAddresses", "bool"), 17: ("ipFamilyPolicy", "string?"),
                    18: ("clusterIPs", "[]string"), 19: ("ipFamilies", "[]string"), 20: ("allocateLoadBalancerNodePorts", "bool?"),
                    21: ("loadBalancerClass", "string?"), 22: ("internalTrafficPolicy", "string?")},
    "ServicePort": {1: ("name", "string"), 2: ("protocol", "string"), 3: ("port", "int32!"), 4: ("targetPort", "IntOrString"),
                    5: ("nodePort", "int32"), 6: ("appProtocol", "string?")},
    # apps/v1
    "Deployment": {1: ("metadata", "ObjectMeta"), 2: ("spec", "DeploymentSpec"), 3: ("status", "Ignored")},
    "DeploymentSpec": {1: ("replicas", "int32?"), 2: ("selector", "LabelSelector?"), 3: ("template", "PodTemplateSpec"),
                       4: ("strategy", "DeploymentStrategy"), 5: ("minReadySeconds", "int32"), 6: ("revisionHistoryLimit", "int32?"),
                       7: ("paused", "bool"), 9: ("progressDeadlineSeconds", "int32?")},
    "DeploymentStrategy": {1: ("type", "string"), 2: ("rollingUpdate", "RollingUpdateDeployment?")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "IntOrString?"), 2: ("maxSurge", "IntOrString?")},
    "PodTemplateSpec": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodSpec")},
    "PodSpec": {1: ("volumes", "[]Unsupported"), 2: ("containers", "[]Container"), 3: ("restartPolicy", "string"),
                4: ("terminationGracePeriodSeconds", "int64?"), 5: ("activeDeadlineSeconds", "int64?"), 6: ("dnsPolicy", "string"),
                7: ("nodeSelector", "map:string"), 8: ("serviceAccountName", "string"), 9: ("serviceAccount", "string"),
                10: ("nodeName", "string"), 11: ("hostNetwork", "bool"), 12: ("hostPID", "bool"), 13: ("hostIPC", "bool"),
                14: ("securityContext", "Unsupported?"), 15: ("imagePullSecrets", "[]LocalObjectReference"), 16: ("hostname", "string"),
                17: ("subdomain", "string"), 19: ("schedulerName", "string"), 20: ("initContainers", "[]Container"),
                21: ("automountServiceAccountToken", "bool?"), 24: ("priorityClassName", "string"), 25: ("priority", "int32?"),
                30: ("enableServiceLinks", "bool?")},
    "Container": {1: ("name", "string"), 2: ("image", "string"), 3: ("command", "[]string"), 4: ("args", "[]string"),
                  5: ("workingDir", "string"), 6: ("ports", "[]ContainerPort"), 7: ("env", "[]EnvVar"), 8: ("resources", "ResourceRequirements"),
                  13: ("terminationMessagePath", "string"), 14: ("imagePullPolicy", "string"), 16: ("stdin", "bool"),
                  17: ("stdinOnce", "bool"), 18: ("tty", "bool"), 20: ("terminationMessagePolicy", "string")},
    "ContainerPort": {1: ("name", "string"), 2: ("hostPort", "int32"), 3: ("containerPort", "int32!"), 4: ("protocol", "string"),
                      5: ("hostIP", "string")},
    "EnvVar": {1: ("name", "string"), 2: ("value", "string")},
    "ResourceRequirements": {1: ("limits", "map:Quantity"), 2: ("requests", "map:Quantity")},
    # rbac.authorization.k8s.io/v1
    "Role": {1: ("metadata", "ObjectMeta"), 2: ("rules", "[]PolicyRule!")},
    "ClusterRole": {1: ("metadata", "ObjectMeta"), 2: ("rules", "[]PolicyRule!"), 3: ("aggregationRule", "Unsupported?")},
    "PolicyRule": {1: ("verbs", "[]string"), 2: ("apiGroups", "[]string"), 3: ("resources", "[]string"), 4: ("resourceNames", "[]string"),
                   5: ("nonResourceURLs", "[]string")},
    "RoleBinding": {1: ("metadata", "ObjectMeta"), 2: ("subjects", "[]Subject"), 3: ("roleRef", "RoleRef")},
    "Subject": {1: ("kind", "string"), 2: ("apiGroup", "string"), 3: ("name", "string"), 4: ("namespace", "string")},
    "RoleRef": {1: ("apiGroup", "string!"), 2: ("kind", "string!"), 3: ("name", "string!")},
    # batch/v1
    "Job": {1: ("metadata", "ObjectMeta"), 2: ("spec", "JobSpec"), 3: ("status", "Ignored")},
    "JobSpec": {1: ("parallelism", "int32?"), 2: ("completions", "int32?"), 3: ("activeDeadlineSeconds", "int64?"),
                4: ("selector", "LabelSelector?"), 5: ("manualSelector", "bool?"), 6: ("template", "PodTemplateSpec"),
                7: ("backoffLimit", "int32?"), 8: ("ttlSecondsAfterFinished", "int32?"), 9: ("completionMode", "string?"),
                10: ("suspend", "bool?")},
    "CronJob": {1: ("metadata", "ObjectMeta"), 2: ("spec", "CronJobSpec"), 3: ("status", "Ignored")},
    "CronJobSpec": {1: ("schedule", "string"), 2: ("startingDeadlineSeconds", "int64?"), 3: ("concurrencyPolicy", "string"),
                    4: ("suspend", "bool?"), 5: ("jobTemplate", "JobTemplateSpec"), 6: ("successfulJobsHistoryLimit", "int32?"),
                    7: ("failedJobsHistoryLimit", "int32?"), 8: ("timeZone", "string?")},
    "JobTemplateSpec": {1: ("metadata", "ObjectMeta"), 2: ("spec", "JobSpec")},
    # authentication.k8s.io/v1 (kubectl auth whoami)
    "SelfSubjectReview": {1: ("metadata", "ObjectMeta"), 2: ("status", "Ignored")},
}
# Kinds whose objects can be read: (group/version, kind) -> message.
KINDS = {("v1", "ConfigMap"): "ConfigMap", ("v1", "Secret"): "Secret", ("v1", "Namespace"): "Namespace",
         ("v1", "ServiceAccount"): "ServiceAccount", ("v1", "Service"): "Service", ("apps/v1", "Deployment"): "Deployment",
         ("rbac.authorization.k8s.io/v1", "Role"): "Role", ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
         ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding", ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "RoleBinding",
         ("batch/v1", "Job"): "Job", ("batch/v1", "CronJob"): "CronJob",
         ("authentication.k8s.io/v1", "SelfSubjectReview"): "SelfSubjectReview"}


def _varint(data, pos):
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def fields(data):
    """The fields of one message: a list of (number, wire type, value) in order; value is an int for
    varints and fixed-size fields, bytes for length-delimited ones."""
    out = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated length-delimited field")
            value, pos = bytes(data[pos:pos + size]), pos + size
        elif wire == 1:
            value, pos = struct.unpack_from("<Q", data, pos)[0], pos + 8
        elif wire == 5:
            value, pos = struct.unpack_from("<I", data, pos)[0], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        if number == 0:
            raise ProtobufError("field number 0")
        out.append((number, wire, value))
    return out


def _signed(value, bits):
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def _scalar(kind, wire, value):
    if kind == "string":
        if wire != 2:
            raise ProtobufError("a string field is not length-delimited")
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            raise ProtobufError("invalid UTF-8 in a string field") from exc
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if wire != 0:
        raise ProtobufError(f"a {kind} field is not a varint")
    if kind == "bool":
        return bool(value)
    return _signed(value & ((1 << 64) - 1), 64) if kind == "int64" else _signed(value & 0xFFFFFFFF, 32)


def _value(kind, wire, value):
    if kind in MESSAGES or kind in ("Unsupported", "Ignored"):
        if wire != 2:
            raise ProtobufError(f"a {kind} field is not a message")
        return decode_message(value, kind)
    return _scalar(kind, wire, value)


def decode_message(data, name):
    """One message as its JSON form (see the module docstring)."""
    if name == "Ignored":  # a status: never stored from a create or update of the main resource
        fields(data)
        return {}
    if name == "Unsupported":
        raise ProtobufError("a field the simulator's protobuf tables do not describe (send JSON)")
    table = MESSAGES[name]
    out = {}
    for number, wire, raw in fields(data):
        if number not in table:
            raise ProtobufError(f"field {number} of {name} is not in the simulator's protobuf tables (send JSON)")
        key, kind = table[number]
        keep_zero = kind.endswith("?") or kind.endswith("!")
        kind = kind.rstrip("?!")
        if kind.startswith("map:"):
            entry = {n: (w, v) for n, w, v in fields(raw if wire == 2 else b"")}
            k = _scalar("string", *entry[1]) if 1 in entry else ""
            v = _value(kind[4:], *entry[2]) if 2 in entry else ("" if kind[4:] in ("string", "bytes") else {})
            out.setdefault(key, {})[k] = v
        elif kind.startswith("[]"):
            out.setdefault(key, []).append(_value(kind[2:], wire, raw))
        else:
            value = _value(kind, wire, raw)
            if not keep_zero and value in ("", 0, False) and not isinstance(value, dict):
                out.pop(key, None)
                continue
            out[key] = value
    return _special(name, out)


def _special(name, out):
    """Messages whose JSON form is not an object."""
    if name == "Time":
        if not out.get("seconds"):
            return None
        stamp = datetime.datetime.fromtimestamp(out["seconds"], datetime.timezone.utc)
        return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    if name == "Quantity":
        return out.get("string", "0")
    if name == "IntOrString":
        return out.get("strVal", "") if out.get("type") == 1 else out.get("intVal", 0)
    if name in ("ObjectMeta", "Container", "PodSpec", "ServiceSpec", "DeploymentSpec", "PodTemplateSpec", "DeploymentStrategy", "JobSpec",
                "CronJobSpec", "JobTemplateSpec"):
        return {k: v for k, v in out.items() if v is not None}
    return out


def decode_body(data):
    """The object (JSON form) of a ``k8s\\x00`` + ``runtime.Unknown`` request body."""
    if not data.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic number")
    unknown = decode_message(data[len(MAGIC):], "Unknown")
    meta = unknown.get("typeMeta") or {}
    api_version, kind = meta.get("apiVersion", ""), meta.get("kind", "")
    message = KINDS.get((api_version, kind))
    if message is None:
        raise ProtobufError(f"the simulator reads protobuf bodies of {', '.join(k for _, k in KINDS)} only, not {api_version} {kind} "
                            "(send JSON)")
    if unknown.get("contentEncoding"):
        raise ProtobufError(f"unsupported content encoding {unknown['contentEncoding']!r}")
    obj = decode_message(base64.b64decode(unknown.get("raw", "")), message)
    meta = obj.get("metadata")
    if isinstance(meta, dict) and meta.get("creationTimestamp") is None:
        meta.pop("creationTimestamp", None)
    if obj.get("status") == {}:
        del obj["status"]
    return {"apiVersion": api_version, "kind": kind, **obj}
