"""Admission: ServiceAccount admission's lookup, Pod Security admission (``enforce``) and ValidatingAdmissionPolicy,
for the writes of clients (dry runs included), after defaulting and built-in validation, as kube-apiserver runs them.

Honest subsets, pinned to kube-apiserver v1.36 by ``tests/conformance/test_admission.py``:

- **ServiceAccount**: a new Pod whose ServiceAccount (``default`` if it names none) does not exist is refused
  (``error looking up service account <ns>/<name>``); the token volume the real plugin adds is not.
- **Pod Security** (a Namespace's ``pod-security.kubernetes.io/<mode>`` and ``-version`` labels must name a level
  and a version; the namespace's ``pod-security.kubernetes.io/enforce`` label, with ``-version`` shown in the
  message): Pods only (workload controllers get warnings, which the simulator does not send), on create and on an
  update of the spec. The baseline checks of capabilities, host namespaces, hostPath volumes, host ports and
  privileged containers; the restricted checks of privilege escalation, capabilities, volume types, runAsNonRoot,
  runAsUser and seccomp profiles. Other checks (AppArmor, SELinux, procMount, sysctls, host probes, Windows) are
  not made: a Pod they refuse is admitted here.
- **ValidatingAdmissionPolicy**: bindings with ``validationActions: [Deny]`` of policies whose ``matchConstraints``
  and the binding's ``matchResources`` (resource rules with operations, groups, versions, resources, names and
  scope, exclusions, namespace and object selectors) match the request. CEL is not evaluated: expressions
  (validations, match conditions) may only be the literals ``true`` and ``false``, and a policy with anything else
  or with parameters fails the request with a 500 that says so, so that no test passes by accident.
"""

import re

from . import errors

ENFORCE = "pod-security.kubernetes.io/enforce"
LEVELS = ("privileged", "baseline", "restricted")
_BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                          "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
_RESTRICTED_VOLUMES_OK = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret")
VAP = ("admissionregistration.k8s.io", "validatingadmissionpolicies")
VAPB = ("admissionregistration.k8s.io", "validatingadmissionpolicybindings")


class Admission:
    """The validating admission of one :class:`~.cluster.Cluster` (called with its lock held)."""

    def __init__(self, cluster):
        self.c = cluster

    def admit(self, rt, old, obj, namespace_of=None):
        """Raise the ApiError kube-apiserver answers if admission refuses writing ``obj`` (``old``: the stored object
        of an update, else None). ``namespace_of(name)``: the stored Namespace (the cluster's by default)."""
        ns_of = namespace_of or self.c._namespace
        if rt.kind == "Namespace" and rt.crd is None:
            _pod_security_labels(obj)
        if rt.kind == "Pod" and rt.crd is None and old is None:
            self._service_account(obj)
        if rt.kind == "Pod" and rt.crd is None and (old is None or old.get("spec") != obj.get("spec")):
            refusal = pod_security(obj, ns_of(obj["metadata"].get("namespace")))
            if refusal:
                raise errors.ApiError(403, "Forbidden", f'pods "{obj["metadata"]["name"]}" is forbidden: {refusal}',
                                      {"name": obj["metadata"]["name"], "kind": "pods"})
        self._policies(rt, old, obj, ns_of)

    def _service_account(self, pod):
        """ServiceAccount admission: a new Pod's ServiceAccount must exist."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        sa_rt = self.c.by_gvr[("", "v1", "serviceaccounts")]
        if self.c._find(sa_rt, meta.get("namespace"), account) is None:
            raise errors.ApiError(403, "Forbidden", f'pods "{meta["name"]}" is forbidden: error looking up service account '
                                  f'{meta.get("namespace")}/{account}: serviceaccount "{account}" not found',
                                  {"name": meta["name"], "kind": "pods"})

    def allows(self, rt, obj):
        """Whether a controller's create of ``obj`` (a Pod of a ReplicaSet) is admitted."""
        try:
            self.admit(rt, None, obj)
        except errors.ApiError:
            return False
        return True

    def _policies(self, rt, old, obj, ns_of):
        bindings = self.c.objects.get(VAPB) or {}
        if not bindings or rt.key in (VAP, VAPB):
            return
        policies = {o["metadata"]["name"]: o for o in (self.c.objects.get(VAP) or {}).values()}
        operation = "CREATE" if old is None else "UPDATE"
        for _key, binding in sorted(bindings.items()):
            spec = binding.get("spec") or {}
            policy = policies.get(spec.get("policyName"))
            if policy is None or "Deny" not in (spec.get("validationActions") or []):
                continue
            pspec = policy.get("spec") or {}
            request = (rt, operation, obj, old, ns_of)
            if not _matches(pspec.get("matchConstraints"), request) or (
                    spec.get("matchResources") and not _matches(spec["matchResources"], request)):
                continue
            name = policy["metadata"]["name"]
            if pspec.get("paramKind") or spec.get("paramRef"):
                raise _unsupported(name, "parameters")
            if not all(_literal(name, c.get("expression")) for c in pspec.get("matchConditions") or []):
                continue
            for v in pspec.get("validations") or []:
                if not _literal(name, v.get("expression")):
                    self._deny(rt, obj, name, binding["metadata"]["name"], v)

    @staticmethod
    def _deny(rt, obj, policy, binding, validation):
        text = f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: " + (
            validation.get("message") or "failed expression: " + validation.get("expression", ""))
        reason = validation.get("reason") or "Invalid"
        code = {"Invalid": 422, "Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413}.get(reason, 422)
        name = obj["metadata"].get("name")
        details = errors._details(rt, name)
        details["causes"] = [{"message": text}]
        raise errors.ApiError(code, reason, f'{errors._qualified(rt)} "{name}" is forbidden: {text}', details)


def _unsupported(policy, what):
    return errors.ApiError(500, "InternalError", f"kubesim: ValidatingAdmissionPolicy {policy!r}: {what} not supported "
                           "(only the CEL literals true and false are)")


def _literal(policy, expression):
    text = (expression or "").strip()
    if text not in ("true", "false"):
        raise _unsupported(policy, f"the CEL expression {text!r} is")
    return text == "true"


def selector_matches(selector, labels):
    """A ``LabelSelector`` (``matchLabels``, ``matchExpressions``) against ``labels``; an empty one matches all."""
    labels = labels or {}
    if any(labels.get(k) != v for k, v in ((selector or {}).get("matchLabels") or {}).items()):
        return False
    for e in (selector or {}).get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and key in labels and labels[key] in values) or (
                op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


def _rule_matches(rule, rt, operation, name):
    def has(field, value):
        return any(v in ("*", value) for v in rule.get(field) or [])

    scope = rule.get("scope") or "*"
    return (has("operations", operation) and has("apiGroups", rt.group) and has("apiVersions", rt.version)
            and has("resources", rt.plural) and (not rule.get("resourceNames") or name in rule["resourceNames"])
            and (scope == "*" or scope == ("Namespaced" if rt.namespaced else "Cluster")))


def _matches(match, request):
    """Whether ``matchConstraints`` / ``matchResources`` ``match`` select the request."""
    rt, operation, obj, old, ns_of = request
    match = match or {}
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    rules = match.get("resourceRules")  # a binding's matchResources without rules: all the policy matches
    if rules and not any(_rule_matches(r, rt, operation, name) for r in rules):
        return False
    if any(_rule_matches(r, rt, operation, name) for r in match.get("excludeResourceRules") or []):
        return False
    objects = [o for o in (obj, old) if o is not None]
    if not any(selector_matches(match.get("objectSelector"), (o.get("metadata") or {}).get("labels")) for o in objects):
        return False
    if rt.kind == "Namespace" and rt.crd is None:
        return selector_matches(match.get("namespaceSelector"), meta.get("labels"))
    if not rt.namespaced:
        return True  # another cluster-scoped object: the namespace selector never skips it
    namespace = ns_of(meta.get("namespace"))
    return selector_matches(match.get("namespaceSelector"), ((namespace or {}).get("metadata") or {}).get("labels"))


# ------------------------------------------------------------------------------------------ Pod Security
def _pod_security_labels(namespace):
    """Pod Security admission refuses a Namespace whose ``pod-security.kubernetes.io`` labels name no level/version."""
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    causes = []
    for mode in ("audit", "enforce", "warn"):
        key = "pod-security.kubernetes.io/" + mode
        if key in labels and labels[key] not in LEVELS:
            causes.append((f"metadata.labels[{key}]", "FieldValueInvalid",
                           f'Invalid value: "{labels[key]}": must be one of privileged, baseline, restricted'))
        version = labels.get(key + "-version")
        if version is not None and version != "latest" and not re.fullmatch(r"v1\.(0|[1-9][0-9]*)", version):
            causes.append((f"metadata.labels[{key}-version]", "FieldValueInvalid", f'Invalid value: "{version}": must be "latest" or "v1.x"'))
    if causes:
        raise errors.invalid("Namespace", namespace["metadata"]["name"], causes)


def _plural(singular, plural, n):
    return singular if n == 1 else plural


def _quoted(names):
    return ", ".join(f'"{n}"' for n in names)


def _containers(spec):
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                yield c


def _sc(c):
    return c.get("securityContext") or {}


def _who(names):
    return f"{_plural('container', 'containers', len(names))} {_quoted(names)}"


def _capabilities_baseline(spec):
    bad, caps = [], set()
    for c in _containers(spec):
        added = [a for a in (_sc(c).get("capabilities") or {}).get("add") or [] if a not in _BASELINE_CAPABILITIES]
        if added:
            bad.append(c.get("name"))
            caps.update(added)
    if bad:
        return "non-default capabilities", f"{_who(bad)} must not include {_quoted(sorted(caps))} in securityContext.capabilities.add"
    return None


def _host_namespaces(spec):
    found = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    return ("host namespaces", ", ".join(found)) if found else None


def _host_path_volumes(spec):
    bad = [v.get("name") for v in spec.get("volumes") or [] if isinstance(v, dict) and "hostPath" in v]
    return ("hostPath volumes", f"{_plural('volume', 'volumes', len(bad))} {_quoted(bad)}") if bad else None


def _host_ports(spec):
    bad, ports = [], set()
    for c in _containers(spec):
        found = [str(p.get("hostPort")) for p in c.get("ports") or [] if isinstance(p, dict) and p.get("hostPort")]
        if found:
            bad.append(c.get("name"))
            ports.update(found)
    if bad:
        return "hostPort", (f"{_who(bad)} {_plural('uses', 'use', len(bad))} {_plural('hostPort', 'hostPorts', len(ports))} "
                            + ", ".join(sorted(ports)))
    return None


def _privileged(spec):
    bad = [c.get("name") for c in _containers(spec) if _sc(c).get("privileged") is True]
    return ("privileged", f"{_who(bad)} must not set securityContext.privileged=true") if bad else None


def _privilege_escalation(spec):
    bad = [c.get("name") for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]
    return ("allowPrivilegeEscalation != false", f"{_who(bad)} must set securityContext.allowPrivilegeEscalation=false") if bad else None


def _capabilities_restricted(spec):
    no_drop, adding, caps = [], [], set()
    for c in _containers(spec):
        capabilities = _sc(c).get("capabilities")
        if capabilities is None or "ALL" not in (capabilities.get("drop") or []):
            no_drop.append(c.get("name"))
        added = [a for a in (capabilities or {}).get("add") or [] if a != "NET_BIND_SERVICE"]
        if added:
            adding.append(c.get("name"))
            caps.update(added)
    details = []
    if no_drop:
        details.append(f'{_who(no_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_who(adding)} must not include {_quoted(sorted(caps))} in securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


def _restricted_volumes(spec):
    names, types = set(), set()
    for v in spec.get("volumes") or []:
        if isinstance(v, dict) and not any(t in v for t in _RESTRICTED_VOLUMES_OK):
            names.add(v.get("name"))
            types.update(k for k in v if k != "name")
    if not names:
        return None
    n = len(names)
    return "restricted volume types", (f"{_plural('volume', 'volumes', n)} {_quoted(sorted(names))} {_plural('uses', 'use', n)} "
                                       f"restricted volume {_plural('type', 'types', len(types))} {_quoted(sorted(types))}")


def _pod_or_containers(spec, field, good, bad_value):
    """``(explicitly bad setters, containers left unset without a good pod-level value)`` of one securityContext field."""
    setters, pod_good = [], False
    pod_value = (spec.get("securityContext") or {}).get(field)
    if pod_value is not None:
        if good(pod_value):
            pod_good = True
        elif bad_value(pod_value):
            setters.append("pod")
    explicit, implicit = [], []
    for c in _containers(spec):
        value = _sc(c).get(field)
        if value is not None:
            if not good(value) and bad_value(value):
                explicit.append(c.get("name"))
        elif not pod_good:
            implicit.append(c.get("name"))
    if explicit:
        setters.append(_who(explicit))
    return setters, implicit


def _run_as_non_root(spec):
    setters, implicit = _pod_or_containers(spec, "runAsNonRoot", lambda v: v is True, lambda v: v is False)
    if setters:
        return "runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false"
    if implicit:
        return "runAsNonRoot != true", f"pod or {_who(implicit)} must set securityContext.runAsNonRoot=true"
    return None


def _run_as_user(spec):
    setters = ["pod"] if (spec.get("securityContext") or {}).get("runAsUser") == 0 else []
    bad = [c.get("name") for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
    if bad:
        setters.append(_who(bad))
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


def _seccomp(spec):
    def kind(value):
        return (value or {}).get("type")

    values = set()

    def bad(value):
        if kind(value) in ("RuntimeDefault", "Localhost"):
            return False
        values.add(kind(value) or "")
        return True

    setters, implicit = _pod_or_containers(spec, "seccompProfile", lambda v: kind(v) in ("RuntimeDefault", "Localhost"), bad)
    if setters:
        return "seccompProfile", f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_quoted(sorted(values))}"
    if implicit:
        return "seccompProfile", (f'pod or {_who(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" '
                                  'or "Localhost"')
    return None


#: (level, check) in the order kube-apiserver reports them
_CHECKS = (("baseline", _capabilities_baseline), ("baseline", _host_namespaces), ("baseline", _host_path_volumes),
           ("baseline", _host_ports), ("baseline", _privileged), ("restricted", _privilege_escalation),
           ("restricted", _capabilities_restricted), ("restricted", _restricted_volumes), ("restricted", _run_as_non_root),
           ("restricted", _run_as_user), ("restricted", _seccomp))
_REPLACED = {_capabilities_baseline, _host_path_volumes}  # by the restricted checks of capabilities and volume types


def pod_security(pod, namespace):
    """The refusal (``violates PodSecurity "<level>:<version>": ...``) of ``pod`` in ``namespace``, or None."""
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    level = labels.get(ENFORCE)
    if level not in ("baseline", "restricted"):
        return None
    version = labels.get(ENFORCE + "-version") or "latest"
    spec = pod.get("spec") or {}
    found = []
    for check_level, check in _CHECKS:
        if (check_level == "restricted" and level != "restricted") or (level == "restricted" and check in _REPLACED):
            continue
        result = check(spec)
        if result:
            found.append(f"{result[0]} ({result[1]})")
    return f'violates PodSecurity "{level}:{version}": ' + ", ".join(found) if found else None
