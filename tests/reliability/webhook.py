"""A validating admission webhook on 127.0.0.1 that holds chosen requests: it opens race windows.

:class:`Webhook` serves HTTPS with a certificate of a CA it generates (``cryptography``), answers every
AdmissionReview with ``allowed: true``, and keeps the ones ``hold(request)`` picks waiting until the test
releases them (or a timeout). :meth:`Webhook.install` registers it with a ValidatingWebhookConfiguration for
the objects of one namespace that carry the label ``stacksync-test/webhook`` and waits until the API server
calls it (a real kube-apiserver picks new configurations up after a moment). The simulator runs the same
configuration (``tests/kubesim/webhooks.py``).
"""

import base64
import contextlib
import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

LABEL = "stacksync-test/webhook"
VWCS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


def _pki(directory):
    """``(ca_pem, cert_path, key_path)``: a CA and a 127.0.0.1 serving certificate signed by it."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "stacksync-test-webhook-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = Path(directory) / "tls.crt", Path(directory) / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return ca.public_bytes(serialization.Encoding.PEM), str(cert_path), str(key_path)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        hook = self.server.hook
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        request = review.get("request") or {}
        hook.arrived(request)
        response = {"uid": request.get("uid"), "allowed": True}
        denial = hook.deny(request)
        if denial:
            response.update(allowed=False, status=denial)
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Webhook:
    """The webhook server. ``hold(request) -> bool`` picks the AdmissionReview requests to keep waiting;
    ``deny(request)`` may return the ``status`` of a denial; ``calls`` lists ``(time.time(), operation,
    namespace, name)`` of every request it was sent."""

    def __init__(self, hold=None, max_hold=25.0, deny=None):
        self.hold = hold or (lambda request: False)
        self.deny = deny or (lambda request: None)
        self.max_hold = max_hold
        self.calls = []
        self.holding = threading.Event()  # set while a request is held
        self.held = []  # the requests held (AdmissionReview requests)
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._dir = tempfile.TemporaryDirectory(prefix="stacksync-webhook-")
        self.ca_pem, cert, key = _pki(self._dir.name)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.hook = self
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}/validate"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        self.name = f"hold-{uuid.uuid4().hex[:8]}.stacksync.io"
        self.installed = []

    def arrived(self, request):
        meta = (request.get("object") or request.get("oldObject") or {}).get("metadata") or {}
        with self._lock:
            self.calls.append((time.time(), request.get("operation"), request.get("namespace"), request.get("name")))
            picked = (meta.get("labels") or {}).get(LABEL) != "probe" and self.hold(request)
            if picked:
                self.held.append(request)
        if picked:
            self.holding.set()
            self._release.wait(self.max_hold)

    def release(self):
        """Let the held requests (and all later ones) through."""
        self.hold = lambda request: False
        self._release.set()

    def wait_held(self, timeout=30):
        assert self.holding.wait(timeout), "the webhook was never asked about a request it should hold"
        return self.held[0]

    def configuration(self, namespace, operations, resources=("configmaps",), failure_policy="Ignore", url=None,
                      side_effects="None"):
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": self.name},
                "webhooks": [{"name": self.name, "admissionReviewVersions": ["v1"], "sideEffects": side_effects,
                              "failurePolicy": failure_policy, "timeoutSeconds": 30,
                              "clientConfig": {"url": url or self.url, "caBundle": base64.b64encode(self.ca_pem).decode()},
                              "rules": [{"operations": list(operations), "apiGroups": [""], "apiVersions": ["v1"],
                                         "resources": list(resources), "scope": "Namespaced"}],
                              "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                              "objectSelector": {"matchExpressions": [{"key": LABEL, "operator": "Exists"}]}}]}

    def install(self, client, namespace, operations, timeout=60, **options):
        """Register for ConfigMaps labelled :data:`LABEL` in ``namespace``; wait until the server calls us."""
        client.create(VWCS, self.configuration(namespace, operations, **options))
        self.installed.append(client)
        deadline = time.time() + timeout
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        while True:
            probe = "webhook-probe-" + uuid.uuid4().hex[:6]
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": probe, "namespace": namespace, "labels": {LABEL: "probe"}}}
            client.create(path, body)
            client.replace(path + "/" + probe, dict(body, data={"probe": "update"}))
            client.delete(path + "/" + probe)
            if any(name == probe for _t, _op, _ns, name in self.calls):
                return
            assert time.time() < deadline, "the API server never called the webhook"
            time.sleep(0.5)

    def close(self):
        self.release()
        for client in self.installed:
            with contextlib.suppress(ApiError):
                client.delete(VWCS + "/" + self.name)
        self.httpd.shutdown()
        self.httpd.server_close()
        self._dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
