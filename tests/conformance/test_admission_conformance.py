"""Validating admission webhooks: the simulator (``tests/kubesim/webhooks.py``) against a real kube-apiserver.

A webhook on 127.0.0.1 (``tests/reliability/webhook.py``) is registered for one namespace's labelled
ConfigMaps: both servers call it for the operations and objects its rules select, refuse what it denies with
the same status, fail or ignore an unreachable one as its failurePolicy says, and -- what the race tests
depend on -- a request it holds is carried out only when it answers, against the object as it is *then*.
"""

import threading
import time

from tests.reliability.webhook import LABEL, VWCS, Webhook

NS_PREFIX = "adm"


def cm(name, ns, labels=None, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "data": data or {"k": "v"}}


def test_validating_webhook_denies_and_holds(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    deny = lambda r: {"code": 403, "message": "no " + r["name"]} if r["name"].startswith("deny") else None  # noqa: E731
    with Webhook(deny=deny, hold=lambda r: r["operation"] == "DELETE" and r["name"] == "held") as hook:
        hook.install(_Http(api), ns, ["CREATE", "DELETE"])
        status, body, _ = api.request("POST", path, cm("deny-me", ns, {LABEL: "x"}))
        assert (status, body.get("reason"), body["message"]) == (
            403, None, f'admission webhook "{hook.name}" denied the request: no deny-me'), body
        # not labelled: not sent to the webhook at all
        status, _b, _ = api.request("POST", path, cm("deny-unlabelled", ns))
        assert status == 201 and not [c for c in hook.calls if c[3] == "deny-unlabelled"]
        # a DELETE held by the webhook runs against the object as it is once the webhook answers
        status, held, _ = api.request("POST", path, cm("held", ns, {LABEL: "x"}))
        assert status == 201
        answers = []
        preconditions = {"uid": held["metadata"]["uid"], "resourceVersion": held["metadata"]["resourceVersion"]}
        worker = threading.Thread(target=lambda: answers.append(api.request(
            "DELETE", f"{path}/held", {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions})))
        worker.start()
        hook.wait_held()
        status, _b, _ = api.request("PATCH", f"{path}/held", {"data": {"k": "changed"}},
                                    content_type="application/merge-patch+json")
        assert status == 200
        hook.release()
        worker.join(30)
        status, body, _ = answers[0]
        assert status == 409 and "Precondition failed: ResourceVersion in precondition" in body["message"], body
        assert api.request("GET", f"{path}/held")[0] == 200


def test_unreachable_webhook_fails_or_is_ignored_by_its_failure_policy(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    with Webhook() as hook:
        hook.install(_Http(api), ns, ["CREATE"])
        api.request("DELETE", VWCS + "/" + hook.name)
        closed = "https://127.0.0.1:1/validate"
        for policy, expected in (("Ignore", 201), ("Fail", 500)):
            hook.name = f"{policy.lower()}-{hook.name}"
            status, body, _ = api.request("POST", VWCS, hook.configuration(ns, ["CREATE"], failure_policy=policy, url=closed))
            assert status == 201, body
            deadline = time.time() + 30
            while True:  # a real server picks the configuration up after a moment
                status, body, _ = api.request("POST", path, cm(f"c-{policy.lower()}-{int(time.time() * 1000)}", ns, {LABEL: "x"}))
                if status == expected or time.time() > deadline:
                    break
                time.sleep(0.5)
            assert status == expected, body
            if expected == 500:
                assert body["reason"] == "InternalError" and f'failed calling webhook "{hook.name}"' in body["message"], body
            api.request("DELETE", VWCS + "/" + hook.name)


class _Http:
    """The few client calls :meth:`Webhook.install` makes, over the conformance tests' raw HTTP client."""

    def __init__(self, api):
        self.api = api

    def create(self, path, body):
        status, out, _ = self.api.request("POST", path, body)
        assert status in (200, 201), out
        return out

    def replace(self, path, body):
        status, out, _ = self.api.request("PUT", path, body)
        assert status == 200, out
        return out

    def delete(self, path):
        self.api.request("DELETE", path)
