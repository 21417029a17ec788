"""A tiny HTTP client for tests: bearer token, JSON in/out, keep-alive (urllib3)."""

import json
import time
from urllib.parse import urlencode

import urllib3
import yaml


class KubeHTTP:
    """Plain HTTP access to an API server (real or simulated)."""

    def __init__(self, server, token, ca_cert=None, timeout=30.0):
        self.server = server.rstrip("/")
        self.token = token
        kwargs = {"cert_reqs": "CERT_REQUIRED", "ca_certs": ca_cert} if ca_cert else {"cert_reqs": "CERT_NONE"}
        self.pool = urllib3.PoolManager(maxsize=4, timeout=urllib3.Timeout(total=timeout), retries=False, **kwargs)

    @classmethod
    def from_kubeconfig(cls, path, ca_path=None):
        """Client for the current context of a token kubeconfig (CA data written to ``ca_path``)."""
        server, token, ca = read_kubeconfig(path, ca_path)
        return cls(server, token, ca)

    def request(self, method, path, body=None, content_type="application/json", headers=None, token=None, **params):
        """Send a request; returns (status, decoded body, response headers)."""
        hdrs = {"Accept": "application/json", "User-Agent": "stacksync-conformance/1.0"}
        tok = self.token if token is None else token
        if tok:
            hdrs["Authorization"] = f"Bearer {tok}"
        data = None
        if body is not None:
            hdrs["Content-Type"] = content_type
            if isinstance(body, (bytes, str)):
                data = body
            elif content_type == "application/apply-patch+yaml":
                data = yaml.safe_dump(body)
            else:
                data = json.dumps(body)
        hdrs.update(headers or {})
        query = {k: ("true" if v is True else v) for k, v in params.items() if v is not None}
        url = self.server + path + (("?" + urlencode(query)) if query else "")
        resp = self.pool.request(method, url, body=data, headers=hdrs)
        try:
            decoded = json.loads(resp.data) if resp.data else None
        except ValueError:
            decoded = resp.data.decode(errors="replace")
        return resp.status, decoded, resp.headers

    def get(self, path, **params):
        """GET."""
        return self.request("GET", path, **params)

    def apply(self, path, obj, manager="stacksync", **params):
        """Server-side apply."""
        return self.request("PATCH", path, obj, "application/apply-patch+yaml", fieldManager=manager, **params)

    def wait_for(self, predicate, timeout=30.0, interval=0.1):
        """Poll ``predicate()`` until it returns a truthy value; return it (or fail with AssertionError)."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout}s")
            time.sleep(interval)


def read_kubeconfig(path, ca_path=None):
    """(server, token, ca file or None) of the current context of a kubeconfig."""
    import base64

    with open(path) as f:
        cfg = yaml.safe_load(f)
    ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == cfg["current-context"])
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
    ca = cluster.get("certificate-authority")
    if cluster.get("certificate-authority-data") and ca_path:
        with open(ca_path, "wb") as f:
            f.write(base64.b64decode(cluster["certificate-authority-data"]))
        ca = ca_path
    return cluster["server"], user.get("token"), ca
