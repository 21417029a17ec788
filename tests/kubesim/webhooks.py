"""Validating admission webhooks: ``admissionregistration.k8s.io/v1`` ValidatingWebhookConfigurations with a
``clientConfig.url``, called as kube-apiserver calls them.

For each create, update, patch and delete of a resource (not of the webhook configurations themselves, not of
subresources), every webhook whose rules (operations, apiGroups, apiVersions, resources, scope), namespaceSelector
and objectSelector (matched against the object *or* the old object) match gets an ``admission.k8s.io/v1``
AdmissionReview POSTed to its URL (``?timeout=<n>s`` appended, the CA of ``caBundle`` trusted), before the
request is carried out and without holding the cluster's lock -- so a webhook that takes its time holds just
that request, as on the real server. A denial answers the webhook's status (code 400 unless it says >= 400)
with ``admission webhook "<name>" denied the request: <message>``; a webhook that cannot be called (refused,
timed out after ``timeoutSeconds``, default 10; a bad answer) fails the request with 500 InternalError under
``failurePolicy: Fail`` (the default) and is skipped under ``Ignore``. Webhooks naming a Service are never
reachable here (no Pods run): they count as failing to be called. Pinned by
``tests/conformance/test_admission_conformance.py``.

Deviations: the patched object a webhook sees for a patch is the patch body (the real server sends the result
of applying it); mutating webhooks and ValidatingAdmissionPolicies are not run.
"""

import base64
import json
import ssl
import urllib.error
import urllib.request
import uuid

from . import errors
from .selectors import label_match

VWC = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
OPERATIONS = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE"}


def _selector_matches(selector, labels):
    """A ``metav1.LabelSelector`` (matchLabels / matchExpressions) against ``labels``; None or {} matches all."""
    reqs = [(k, "=", [v]) for k, v in ((selector or {}).get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for e in (selector or {}).get("matchExpressions") or []:
        reqs.append((e.get("key"), ops.get(e.get("operator"), "in"), list(e.get("values") or [])))
    return label_match(labels or {}, reqs)


def _rule_matches(rule, operation, rt, namespaced):
    def has(field, value):
        values = rule.get(field) or []
        return "*" in values or value in values

    scope = rule.get("scope") or "*"
    if (scope == "Cluster" and namespaced) or (scope == "Namespaced" and not namespaced):
        return False
    return (has("operations", operation) and has("apiGroups", rt.group) and has("apiVersions", rt.version)
            and (has("resources", rt.plural) or "*/*" in (rule.get("resources") or [])))


def _labels(obj):
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _matches(cluster, wh, operation, rt, ns, obj, old):
    if not any(_rule_matches(r, operation, rt, rt.namespaced) for r in wh.get("rules") or []):
        return False
    if rt.namespaced and ns:
        namespace = cluster.objects[("", "namespaces")].get(("", ns))
        if not _selector_matches(wh.get("namespaceSelector"), _labels(namespace)):
            return False
    elif rt.key == ("", "namespaces") and not any(_selector_matches(wh.get("namespaceSelector"), _labels(o)) for o in (obj, old) if o):
        return False
    return any(_selector_matches(wh.get("objectSelector"), _labels(o)) for o in [o for o in (obj, old) if o] or [{}])


def _review(req, rt, operation, ns, name, obj, old, dry_run):
    user = req.user
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "resource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "requestKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "requestResource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "name": name or "", "namespace": ns or "", "operation": operation,
        "userInfo": {"username": user.name if user else "", "groups": user.all_groups if user else []},
        "object": obj if operation != "DELETE" else None, "oldObject": old if operation != "CREATE" else None,
        "dryRun": dry_run, "options": {"apiVersion": "meta.k8s.io/v1", "kind": operation.title() + "Options"}}}


def _call(wh, review):
    """The webhook's ``response``; raises ``ValueError`` (with the real server's words) if it cannot be had."""
    config = wh.get("clientConfig") or {}
    url = config.get("url")
    if not url:
        service = config.get("service") or {}
        raise ValueError(f'failed to call webhook: Post "https://{service.get("name")}.{service.get("namespace")}.svc:'
                         f'{service.get("port", 443)}{service.get("path") or ""}?timeout={wh.get("timeoutSeconds") or 10}s": '
                         f'service "{service.get("name")}" not reachable')
    timeout = int(wh.get("timeoutSeconds") or 10)
    target = f"{url}{'&' if '?' in url else '?'}timeout={timeout}s"
    context = ssl.create_default_context()
    if config.get("caBundle"):
        context = ssl.create_default_context(cadata=base64.b64decode(config["caBundle"]).decode("ascii"))
    request = urllib.request.Request(target, data=json.dumps(review).encode("utf-8"), method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:
            answer = json.loads(resp.read().decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError) as e:
        reason = "context deadline exceeded" if "timed out" in str(e) else str(getattr(e, "reason", e))
        raise ValueError(f'failed to call webhook: Post "{target}": {reason}') from None
    response = (answer or {}).get("response") or {}
    if response.get("uid") != review["request"]["uid"]:
        raise ValueError(f'received invalid webhook response: expected response.uid="{review["request"]["uid"]}", '
                         f'got "{response.get("uid")}"')
    return response


def _denied(name, status):
    status = dict(status or {})
    code = status.get("code") if isinstance(status.get("code"), int) and status.get("code") >= 400 else 400
    why = status.get("message") or status.get("reason")
    message = f'admission webhook "{name}" denied the request' + (": " + why if why else " without explanation")
    return errors.ApiError(code, status.get("reason") or "", message)


def validate(sim, req, rt, dry_run):
    """Run the validating webhooks that match this request (raise the ApiError that refuses it)."""
    operation = OPERATIONS.get(req.verb)
    if operation is None or req.subresource or rt.key[0] == "admissionregistration.k8s.io" or getattr(rt, "is_review", False):
        return
    cluster = sim.cluster
    configs = sorted(cluster.objects[VWC].values(), key=lambda c: (c.get("metadata") or {}).get("name") or "")
    if not configs:
        return
    ns = req.namespace if rt.namespaced else None
    old = cluster.objects[rt.key].get((ns or "", req.name)) if req.name else None
    obj = None if operation == "DELETE" else req.json_body()
    if req.verb == "patch" and old is None:
        operation = "CREATE"  # an apply that creates
    name = req.name or ((obj or {}).get("metadata") or {}).get("name")
    for config in configs:
        for wh in config.get("webhooks") or []:
            if not _matches(cluster, wh, operation, rt, ns, obj, old):
                continue
            try:
                response = _call(wh, _review(req, rt, operation, ns, name, obj, old, dry_run))
            except ValueError as e:
                if (wh.get("failurePolicy") or "Fail") == "Ignore":
                    continue
                raise errors.ApiError(500, "InternalError",
                                      f'Internal error occurred: failed calling webhook "{wh.get("name")}": {e}') from None
            if not response.get("allowed"):
                raise _denied(wh.get("name"), response.get("status"))
