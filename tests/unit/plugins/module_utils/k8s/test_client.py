"""client.py: request timeout, retry budget, deterministic 500s, credential-free connection errors."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import client as client_mod
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError, KubeClient, _deterministic, _safe

TYPED_PATCH_500 = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
                   "message": "failed to create typed patch object (default/bad; /v1, Kind=Secret): .data: expected "
                              "map, got &{SuperSecretValue123}"}


class Handler(BaseHTTPRequestHandler):
    script = []
    seen = 0

    def log_message(self, *a):
        pass

    def do_PATCH(self):
        Handler.seen += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, body = self.script.pop(0) if self.script else (200, {"kind": "Ok"})
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PATCH


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Handler.seen = 0
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()


def test_deterministic_500_is_not_retried(server):
    Handler.script = [(500, TYPED_PATCH_500)]
    c = KubeClient(server)
    c.sleep = lambda s: pytest.fail("slept before a retry")
    with pytest.raises(ApiError, match="typed patch"):
        c.apply("/api/v1/namespaces/default/secrets/bad", {"kind": "Secret"}, "m")
    assert Handler.seen == 1


def test_other_500s_are_retried(server):
    Handler.script = [(500, {"kind": "Status", "message": "etcdserver: request timed out", "code": 500}),
                      (200, {"kind": "Ok"})]
    c = KubeClient(server)
    c.sleep = lambda s: None
    assert c.get("/api")["kind"] == "Ok" and Handler.seen == 2


@pytest.mark.parametrize("message,deterministic", [
    ("failed to create typed patch object (x): .data: expected map, got &{v}", True),
    ("failed to convert new object (default/bad; /v1, Kind=Secret) to proper version: illegal base64", True),
    ("etcdserver: leader changed", False),
])
def test_deterministic_markers(message, deterministic):
    assert _deterministic(500, json.dumps({"message": message}).encode()) is deterministic
    assert _deterministic(503, json.dumps({"message": message}).encode()) is False


@pytest.fixture
def silent_server():
    """Accepts TCP connections (the TLS-less equivalent of a completed handshake) and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    conns = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conns.append(sock.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    t.join(2)
    for c in conns:
        c.close()
    sock.close()


def test_a_server_that_never_answers_fails_within_timeout_plus_budget(silent_server):
    c = KubeClient(silent_server, timeout=0.3, retry_budget=0.5)
    c.sleep = lambda s: None
    started = time.monotonic()
    with pytest.raises(ApiError) as info:
        c.get("/api")
    elapsed = time.monotonic() - started
    # attempts start while less than the budget has passed: 0.3 s each, so 2 attempts (0.6 s), not 6 x 0.3 s
    assert c.counts["GET"] == 2 and elapsed < 1.5, (c.counts, elapsed)
    assert info.value.status == 0 and str(info.value) == (
        f"cannot reach {silent_server}: the server did not answer within 0.3 s (request_timeout) (2 tries in 1 s)")


def test_a_dead_server_reads_as_plain_words():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    c = KubeClient(f"https://127.0.0.1:{port}")
    c.sleep = lambda s: None
    with pytest.raises(ApiError) as info:
        c.get("/api/v1/namespaces/default/configmaps")
    assert str(info.value) == f"cannot reach https://127.0.0.1:{port}: connection refused (6 tries in 0 s)"
    assert (info.value.status, info.value.reason, info.value.method) == (0, "ConnectionError", "GET")


def test_default_timeouts_keep_a_dead_server_under_a_minute():
    c = KubeClient("https://127.0.0.1:1")
    timeout = c._pool.connection_pool_kw["timeout"]
    assert timeout.connect_timeout + c.retry_budget < 60 and timeout.read_timeout + c.retry_budget < 60


def test_safe_masks_url_credentials_and_truncates():
    err = Exception("HTTPSConnectionPool(host='x'): proxy https://alice:s3cret@proxy.example:3128/ refused " + "x" * 500)
    text = _safe(err)
    assert "s3cret" not in text and "alice" not in text and "https://********@proxy.example" in text
    assert len(text) == 300


class RetryScriptHandler(BaseHTTPRequestHandler):
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
def retry_server():
    srv = HTTPServer(("127.0.0.1", 0), RetryScriptHandler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    RetryScriptHandler.seen = []
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()


def make(retry_server):
    sleeps = []
    c = KubeClient(retry_server, auth=lambda: {"Authorization": "Bearer t"}, impersonate_groups=["g1", "g2"], max_attempts=4)
    c.sleep = sleeps.append
    return c, sleeps


def test_retries_429_honouring_retry_after_then_5xx(retry_server):
    RetryScriptHandler.script = [(429, {"Retry-After": "3"}, {}), (503, {}, {}), (200, {}, {"kind": "Ok"})]
    c, sleeps = make(retry_server)
    assert c.get("/api")["kind"] == "Ok"
    assert sleeps[0] == 3.0 and len(sleeps) == 2 and c.counts["GET"] == 3
    headers = RetryScriptHandler.seen[0][2]
    assert headers["Authorization"] == "Bearer t"


def test_gives_up_after_bounded_attempts_with_clear_error(retry_server):
    RetryScriptHandler.script = [(500, {}, {"kind": "Status", "reason": "InternalError", "message": "boom"})] * 4
    c, sleeps = make(retry_server)
    with pytest.raises(ApiError) as err:
        c.get("/api/v1/namespaces/x/configmaps/y")
    assert err.value.status == 500 and "boom" in str(err.value) and len(sleeps) == 3


def test_status_errors_expose_reason_and_immutable_fields(retry_server):
    body = {
        "kind": "Status",
        "code": 422,
        "reason": "Invalid",
        "message": 'ConfigMap "c" is invalid',
        "details": {"causes": [{"field": "data", "message": "Forbidden: field is immutable when `immutable` is set"}]},
    }
    RetryScriptHandler.script = [(422, {}, body)]
    c, _ = make(retry_server)
    with pytest.raises(ApiError) as err:
        c.apply("/api/v1/namespaces/n/configmaps/c", {"kind": "ConfigMap"}, "stacksync", force=True)
    assert err.value.immutable_fields() == ["data"]
    assert "force=true" in RetryScriptHandler.seen[0][1] and "fieldManager=stacksync" in RetryScriptHandler.seen[0][1]


def test_fields_only_some_of_which_may_change_read_as_immutable():
    # kube-apiserver v1.36, a StatefulSet whose volumeClaimTemplates changed
    sts = ("Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
           "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
           "are forbidden")
    err = ApiError(422, "Invalid", 'StatefulSet.apps "zk" is invalid: spec: ' + sts,
                   [{"reason": "FieldValueForbidden", "message": sts, "field": "spec"}])
    assert err.immutable_fields() == ["spec"]
    pod = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
    assert ApiError(422, "Invalid", "", [{"message": pod, "field": "spec"}]).immutable_fields() == ["spec"]
    other = ApiError(422, "Invalid", "", [{"message": "Forbidden: may not be set", "field": "spec.x"}])
    assert other.immutable_fields() == []


#: kube-apiserver v1.36's words for a refused change of an immutable field (causes' messages, recorded)
IMMUTABLE_CAUSES = [
    ("spec.clusterIPs[0]", 'Invalid value: ["10.0.0.123"]: may not change once set'),  # Service
    ("spec.selector", 'Invalid value: {"matchLabels":{"app":"web","tier":"front"}}: field is immutable'),  # Deployment
    ("spec.template", 'Invalid value: {"labels":{"job-name":"j"},"Spec":{"Containers":[{"Name":"c"}]}}: field is '
                      'immutable'),  # Job
    ("roleRef", 'Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: cannot '
                'change roleRef'),  # RoleBinding
    ("data", "Forbidden: field is immutable when `immutable` is set"),  # ConfigMap
    ("spec", "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for "
             "bound claims"),  # PersistentVolumeClaim
    ("parameters", "Forbidden: updates to parameters are forbidden."),  # StorageClass
]


@pytest.mark.parametrize("field,message", IMMUTABLE_CAUSES)
def test_the_api_servers_immutable_field_refusals_are_recognised(field, message):
    assert client_mod.immutable_message(message)
    assert ApiError(422, "Invalid", f"X is invalid: {field}: {message}",
                    [{"reason": "FieldValueInvalid", "message": message, "field": field}]).immutable_fields() == [field]


def test_other_refusals_are_not_immutable_fields():
    for message in ("Required value", 'Unsupported value: "x": supported values: "a"', "Forbidden: may not be set",
                    'Invalid value: "a_b": a lowercase RFC 1123 label must consist of ...'):
        assert not client_mod.immutable_message(message)
    assert ApiError(422, "Invalid", "X is invalid", [{"message": "Required value", "field": "spec"}]).immutable_fields() == []
    assert ApiError(409, "Conflict", "field is immutable").immutable_fields() == []
    assert ApiError(422, "Invalid", "Service \"web\" is invalid: may not change once set").immutable_fields() == ["?"]


def test_list_follows_continue_and_sets_kind(retry_server):
    RetryScriptHandler.script = [
        (200, {}, {"kind": "ConfigMapList", "apiVersion": "v1", "items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "tok"}}),
        (200, {}, {"kind": "ConfigMapList", "apiVersion": "v1", "items": [{"metadata": {"name": "b"}}], "metadata": {}}),
    ]
    c, _ = make(retry_server)
    items = c.list("/api/v1/configmaps", label_selector="a=b")
    assert [i["metadata"]["name"] for i in items] == ["a", "b"] and items[0]["kind"] == "ConfigMap"
    assert "continue=tok" in RetryScriptHandler.seen[1][1] and "labelSelector=a%3Db" in RetryScriptHandler.seen[0][1]


def test_connection_errors_are_retried(retry_server):
    RetryScriptHandler.script = [("drop", {}, {}), (200, {}, {"kind": "Ok"})]
    c, sleeps = make(retry_server)
    assert c.get("/api")["kind"] == "Ok" and len(sleeps) == 1


def test_a_write_is_told_before_it_is_sent_and_after_it_ends_even_when_it_fails(retry_server):
    told = []
    c, _sleeps = make(retry_server)
    c.on_write = lambda method, path, params, body: told.append((method, path, len(RetryScriptHandler.seen)))
    c.get("/api")
    assert told == []  # a read is not a write
    c.apply("/api/v1/namespaces/x/configmaps/y", {"kind": "ConfigMap"}, "m")
    assert told == [("PATCH", "/api/v1/namespaces/x/configmaps/y", 1), ("PATCH", "/api/v1/namespaces/x/configmaps/y", 2)]
    RetryScriptHandler.script = [(422, {}, {"kind": "Status", "reason": "Invalid", "message": "no"})]
    with pytest.raises(ApiError):
        c.delete("/api/v1/namespaces/x/configmaps/y")
    assert [t[0] for t in told[2:]] == ["DELETE", "DELETE"]  # it may have been done: told after too


def test_header_pairs_put_credentials_over_the_clients_own_headers_whatever_their_case():
    tokens = iter(["t1", "t2"])
    client = KubeClient("https://127.0.0.1:1", auth=lambda: {"Authorization": f"Bearer {next(tokens)}"},
                        headers={"authorization": "Basic old", "User-Agent": "ua"}, impersonate_groups=["g"])
    assert client.header_pairs() == [("User-Agent", "ua"), ("Impersonate-Group", "g"), ("Accept", "application/json"),
                                     ("Authorization", "Bearer t1")]
    # asked again for each request (a renewed token), the content type last when there is a body
    assert client.header_pairs("application/yaml", "application/apply-patch+yaml")[-3:] == [
        ("Accept", "application/yaml"), ("Authorization", "Bearer t2"), ("Content-Type", "application/apply-patch+yaml")]
    assert KubeClient("https://127.0.0.1:1").header_pairs() == [("Accept", "application/json")]


def test_a_401_says_the_credentials_were_refused():
    assert ApiError(401, "Unauthorized", "Unauthorized").describe() == (
        "401 Unauthorized: Unauthorized (the server did not accept the credentials: check the token, client certificate "
        "or credential plugin of the kubeconfig's user or of the connection options, and whether they expired)")
    assert ApiError(403, "Forbidden", "no").describe() == "403 Forbidden: no"
