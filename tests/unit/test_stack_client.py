"""KubeClient retries (429 with Retry-After, 5xx, dropped connections) and error reporting."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.client import ApiError, KubeClient


class Handler(BaseHTTPRequestHandler):
    script = []
    seen = []

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.seen.append((self.command, self.path, dict(self.headers)))
        status, headers, body = self.script.pop(0) if self.script else (200, {}, {"kind": "X"})
        if status == "drop":
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        data = json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_PATCH = do_DELETE = do_POST = do_GET


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    Handler.seen = []
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()


def make(server):
    sleeps = []
    c = KubeClient(server, auth=lambda: {"Authorization": "Bearer t"}, impersonate_groups=["g1", "g2"], max_attempts=4)
    c.sleep = sleeps.append
    return c, sleeps


def test_retries_429_honouring_retry_after_then_5xx(server):
    Handler.script = [(429, {"Retry-After": "3"}, {}), (503, {}, {}), (200, {}, {"kind": "Ok"})]
    c, sleeps = make(server)
    assert c.get("/api")["kind"] == "Ok"
    assert sleeps[0] == 3.0 and len(sleeps) == 2 and c.counts["GET"] == 3
    headers = Handler.seen[0][2]
    assert headers["Authorization"] == "Bearer t"


def test_gives_up_after_bounded_attempts_with_clear_error(server):
    Handler.script = [(500, {}, {"kind": "Status", "reason": "InternalError", "message": "boom"})] * 4
    c, sleeps = make(server)
    with pytest.raises(ApiError) as err:
        c.get("/api/v1/namespaces/x/configmaps/y")
    assert err.value.status == 500 and "boom" in str(err.value) and len(sleeps) == 3


def test_status_errors_expose_reason_and_immutable_fields(server):
    body = {
        "kind": "Status",
        "code": 422,
        "reason": "Invalid",
        "message": 'ConfigMap "c" is invalid',
        "details": {"causes": [{"field": "data", "message": "Forbidden: field is immutable when `immutable` is set"}]},
    }
    Handler.script = [(422, {}, body)]
    c, _ = make(server)
    with pytest.raises(ApiError) as err:
        c.apply("/api/v1/namespaces/n/configmaps/c", {"kind": "ConfigMap"}, "stacksync", force=True)
    assert err.value.immutable_fields() == ["data"]
    assert "force=true" in Handler.seen[0][1] and "fieldManager=stacksync" in Handler.seen[0][1]


def test_list_follows_continue_and_sets_kind(server):
    Handler.script = [
        (200, {}, {"kind": "ConfigMapList", "apiVersion": "v1", "items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "tok"}}),
        (200, {}, {"kind": "ConfigMapList", "apiVersion": "v1", "items": [{"metadata": {"name": "b"}}], "metadata": {}}),
    ]
    c, _ = make(server)
    items = c.list("/api/v1/configmaps", label_selector="a=b")
    assert [i["metadata"]["name"] for i in items] == ["a", "b"] and items[0]["kind"] == "ConfigMap"
    assert "continue=tok" in Handler.seen[1][1] and "labelSelector=a%3Db" in Handler.seen[0][1]


def test_connection_errors_are_retried(server):
    Handler.script = [("drop", {}, {}), (200, {}, {"kind": "Ok"})]
    c, sleeps = make(server)
    assert c.get("/api")["kind"] == "Ok" and len(sleeps) == 1
