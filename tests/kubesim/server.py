"""HTTP layer: request parsing, authentication/authorization, routing, fault injection, watch streams."""

import http.client
import json
import re
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from . import aggregation, authz, errors, openapi, protobuf, resources, webhooks
from .table import to_table, wants_table
from .unknown import strip_unknown

_AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_VERSION = {"major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36", "minCompatibilityMajor": "1",
            "minCompatibilityMinor": "35", "gitVersion": "v1.36.2-kubesim", "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.26.4", "compiler": "gc",
            "platform": "linux/amd64"}
_PATCH_TYPES = {"application/json-patch+json": "json", "application/merge-patch+json": "merge",
                "application/strategic-merge-patch+json": "strategic", "application/apply-patch+yaml": "apply"}
_HEALTH = ("/healthz", "/livez", "/readyz")
_REASONS = {code: status.phrase for code, status in HTTPStatus.__members__.items() for code in [status.value]}


class Request:
    """A parsed API request."""

    def __init__(self, method, raw_path, headers, body, peer_cert=None):
        parts = urlsplit(raw_path)
        self.peer_cert = peer_cert  # (getpeercert() dict, DER bytes) of a verified client certificate, or None
        self.method = method
        self.path = unquote(parts.path).rstrip("/") or "/"  # decoded, as Go's URL.Path (%3A: a name with ":")
        self.query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        self.headers = headers
        self.body = body
        self.verb = None
        self.rt = None
        self.group = self.version = self.plural = self.namespace = self.name = self.subresource = None
        self.user = None
        self.warnings = []

    def flag(self, name):
        """Boolean query parameter."""
        return self.query.get(name, "").lower() in ("true", "1")

    def json_body(self):
        """Decoded JSON (or YAML, or Kubernetes protobuf: see ``protobuf.py``) request body; None if empty."""
        if not self.body:
            return None
        if (self.headers.get("Content-Type") or "").split(";")[0].strip() == protobuf.CONTENT_TYPE:
            try:
                return protobuf.decode_body(self.body)
            except protobuf.ProtobufError as exc:
                raise errors.bad_request(f"error decoding body: {exc}") from exc
        try:
            return json.loads(self.body)
        except ValueError:
            try:
                return yaml.safe_load(self.body)
            except yaml.YAMLError as exc:
                raise errors.bad_request(f"error decoding body: {exc}") from exc

    @property
    def resource_label(self):
        """``group/plural`` (core: ``plural``), with ``/subresource`` if any."""
        base = f"{self.group}/{self.plural}" if self.group else (self.plural or "")
        return f"{base}/{self.subresource}" if self.subresource else base


def parse_resource_path(req):
    """Fill group/version/plural/namespace/name/subresource from /api or /apis paths; False if not a resource path."""
    parts = req.path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 3:
        req.group, req.version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        req.group, req.version, rest = parts[1], parts[2], parts[3:]
    else:
        return False
    if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
        req.namespace, rest = rest[1], rest[2:]
    req.plural = rest[0]
    req.name = rest[1] if len(rest) > 1 else None
    req.subresource = rest[2] if len(rest) > 2 else None
    if len(rest) > 3:
        raise errors.unknown_resource()
    return True


def verb_of(req):
    """Kubernetes authorization verb for a resource request."""
    method = req.method
    if method == "GET":
        if req.name:
            return "get"
        return "watch" if req.flag("watch") else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method) or ("delete" if req.name else "deletecollection")


class _Headers(http.client.HTTPMessage):
    """Request headers (an ``HTTPMessage``) whose ``get`` skips the email policy for plain ASCII values
    (which it would return unchanged)."""

    def get(self, name, failobj=None):
        name = name.lower()
        for k, v in self._headers:
            if k.lower() == name:
                return v if type(v) is str and v.isascii() else self.policy.header_fetch_parse(k, v)
        return failobj


_DATE = (0, "")  # (second, Date header value) of the last response


class Handler(BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1 handler delegating to the owning simulator."""

    protocol_version = "HTTP/1.1"
    server_version = "kubesim"
    sys_version = ""
    MessageClass = _Headers

    def date_time_string(self, timestamp=None):
        """The Date header value (formatted once per second)."""
        global _DATE
        if timestamp is not None:
            return super().date_time_string(timestamp)
        now = time.time()
        second, text = _DATE
        if int(now) != second:
            text = super().date_time_string(now)
            _DATE = (int(now), text)
        return text

    def log_message(self, format, *args):
        """Silence the default stderr access log (the simulator keeps its own)."""

    def _dispatch(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.sim.handle(self, Request(self.command, self.path, self.headers, body, _peer_cert(self.connection)))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    last_code = 0
    on_respond = None

    def send_response(self, code, message=None):
        """Remember the status code for the request log."""
        self.last_code = code
        super().send_response(code, message)

    def send_json(self, code, payload, extra_headers=None, content_type="application/json"):
        """Write a JSON (or raw bytes) response with a single socket write."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
        self.last_code = code
        if self.on_respond is not None:
            self.on_respond(code)
        head = [f"{self.protocol_version} {code} {_REASONS.get(code, 'Unknown')}", f"Content-Type: {content_type}",
                f"Content-Length: {len(data)}", "Cache-Control: no-cache, private", f"Date: {self.date_time_string()}"]
        head += [f"{k}: {v}" for k, v in (extra_headers or {}).items()]
        if self.close_connection:
            head.append("Connection: close")
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (data if self.command != "HEAD" else b""))

    def send_error_status(self, err):
        """Write an ApiError as a Status (or plain text) response."""
        if err.raw is not None:
            self.send_json(err.code, err.raw.encode(), err.headers, "text/plain; charset=utf-8")
        else:
            self.send_json(err.code, err.status(), err.headers)

    def start_stream(self):
        """Begin a chunked watch response."""
        if self.on_respond is not None:
            self.on_respond(200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

    def send_chunk(self, data):
        """Write one chunk (empty data ends the stream)."""
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _peer_cert(connection):
    """The client certificate of a TLS connection (verified against the simulator's CA), None without one."""
    getpeercert = getattr(connection, "getpeercert", None)
    if getpeercert is None:
        return None
    try:
        cert = getpeercert()
        return (cert, getpeercert(binary_form=True)) if cert else None
    except ValueError:  # the handshake has not happened (a plain socket)
        return None


class Router:
    """Maps requests to cluster operations."""

    def __init__(self, sim):
        self.sim = sim
        self.cluster = sim.cluster

    # ------------------------------------------------------------ discovery
    def non_resource(self, req):
        """Answer discovery, version, health and openapi paths; None if the path is not one of them."""
        types = self.cluster.types
        path = req.path
        accept = req.headers.get("Accept") or ""
        if path in _HEALTH:
            return 200, b"ok", "text/plain; charset=utf-8"
        if path == "/version":
            return 200, _VERSION, "application/json"
        if path in ("/api", "/apis") and "as=APIGroupDiscoveryList" in accept and ";v=v2;" in accept + ";":
            stale = [] if path == "/api" else aggregation.groups_of(self.cluster.unavailable_group_versions())
            return 200, resources.aggregated_discovery(types, path == "/api", stale), _AGGREGATED
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": self.sim.address}]}, "application/json"
        if path == "/apis":
            stale = aggregation.groups_of(self.cluster.unavailable_group_versions())
            return 200, resources.api_group_list(types, stale), "application/json"
        if path == "/api/v1":
            return 200, resources.api_resource_list(types, "", "v1"), "application/json"
        parts = path.strip("/").split("/")
        if parts[0] == "apis" and len(parts) == 2:
            if not resources.versions_of(types, parts[1]):
                stale = dict(aggregation.groups_of(self.cluster.unavailable_group_versions()))
                if parts[1] in stale:
                    return 200, resources.api_group_doc(parts[1], stale[parts[1]]), "application/json"
                raise errors.page_not_found()
            return 200, resources.api_group(types, parts[1]), "application/json"
        if parts[0] == "apis" and len(parts) == 3:
            if (parts[1], parts[2]) not in self.cluster.served:
                self._unavailable(parts[1], parts[2])
                raise errors.page_not_found()
            return 200, resources.api_resource_list(types, parts[1], parts[2]), "application/json"
        if path == "/openapi/v3":
            return 200, openapi.v3_index(types), "application/json"
        if path.startswith("/openapi/v3/"):
            rest = path[len("/openapi/v3/"):].split("/")
            gv = ("", rest[1]) if rest[0] == "api" and len(rest) == 2 else (rest[1], rest[2]) if len(rest) == 3 else None
            doc = openapi.v3_document(types, *gv) if gv else None
            if doc is None:
                raise errors.page_not_found()
            return 200, doc, "application/json"
        if path == "/openapi/v2":
            return 200, openapi.v2_document(types), "application/json"
        return None

    def _unavailable(self, group, version):
        """Raise the real 503 for a group-version of an aggregated API (no server answers for it here)."""
        if any(g == group and v == version for g, v, _, _ in self.cluster.unavailable_group_versions()):
            raise errors.service_unavailable()

    # ------------------------------------------------------------ resources
    def resource(self, handler, req):
        """Execute a resource request and write the response."""
        if (req.group, req.version) not in self.cluster.served:
            self._unavailable(req.group, req.version)
        rt = self.cluster.resolve(req.group, req.version, req.plural)
        req.rt = rt
        verb = req.verb
        if rt.namespaced is False and req.namespace is not None:
            raise errors.unknown_resource()
        if req.subresource and req.subresource not in rt.subresources:
            raise errors.unknown_resource()
        if verb not in rt.verbs and not req.subresource:
            raise errors.method_not_allowed(rt, verb)
        if rt.namespaced and req.name and req.namespace is None and verb != "create":
            raise errors.unknown_resource()
        self._authorize(req, rt)
        dry_run = self._dry_run(req)
        webhooks.validate(self.sim, req, rt, dry_run)
        manager = req.query.get("fieldManager") or _manager_from_agent(req.headers.get("User-Agent"))
        if verb == "watch":
            return self.sim.stream_watch(handler, req, rt)
        if req.subresource == "scale":
            return handler.send_json(*self._scale(req, rt, manager, dry_run))
        code, body = self._execute(req, rt, verb, manager, dry_run)
        if verb in ("get", "list") and wants_table(req.headers.get("Accept")) and not req.subresource:
            body = to_table(rt, body, req.query.get("includeObject", "PartialObjectMetadata"))
        handler.send_json(code, body, {"Warning": ", ".join(req.warnings)} if req.warnings else None)
        return None

    @staticmethod
    def _decoded_body(req, rt):
        """A create/update body as the real server decodes it: undeclared fields dropped (with warnings) or
        refused (``fieldValidation=Strict``)."""
        body = req.json_body()
        if isinstance(body, dict) and not req.subresource:
            req.warnings += strip_unknown(body, rt, req.query.get("fieldValidation") or "Warn")
        return body

    def _execute(self, req, rt, verb, manager, dry_run):
        c = self.cluster
        ns = req.namespace if rt.namespaced else None
        if verb == "get":
            return 200, c.get(rt, ns, req.name, shared=True)
        if verb == "list":
            limit = int(req.query.get("limit") or 0)
            return 200, c.list(rt, ns, req.query.get("labelSelector", ""), req.query.get("fieldSelector", ""), limit, req.query.get("continue", ""))
        if verb == "create":
            if rt.is_review:
                return 201, self.sim.review(req, rt, req.json_body() or {})
            if rt.namespaced and ns is None:
                raise errors.unknown_resource()
            return 201, c.create(rt, ns, self._decoded_body(req, rt), manager, dry_run)
        if verb == "update":
            obj, code = c.update(rt, ns, req.name, self._decoded_body(req, rt), manager, dry_run, req.subresource)
            return code, obj
        if verb == "patch":
            ctype = (req.headers.get("Content-Type") or "").split(";")[0].strip()
            ptype = _PATCH_TYPES.get(ctype)
            if ptype is None:
                raise errors.ApiError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - accepted media types include: '
                                      f'{", ".join(_PATCH_TYPES)}')
            body = _load_apply(req.body) if ptype == "apply" else req.json_body()
            if ptype == "apply":
                manager = req.query.get("fieldManager")
                if not req.subresource and c._find(rt, ns, req.name) is None:  # an apply that creates: the right to create
                    self._authorize(req, rt, "create")
            obj, code = c.patch(rt, ns, req.name, ptype, body, manager, dry_run, req.subresource, req.flag("force"),
                                req.query.get("fieldValidation") or "Warn", req.warnings)
            return code, obj
        options = req.json_body() or {}
        propagation = req.query.get("propagationPolicy") or options.get("propagationPolicy")
        orphan = req.query.get("orphanDependents") or options.get("orphanDependents")
        if propagation is None and orphan in (True, "true"):
            propagation = "Orphan"
        if propagation not in (None, "Background", "Foreground", "Orphan"):
            raise errors.invalid("DeleteOptions", None, [("propagationPolicy", "FieldValueNotSupported",
                                 f'Unsupported value: "{propagation}": supported values: "Foreground", "Background", "Orphan", "nil"')], "meta.k8s.io")
        if verb == "delete":
            body, code = c.delete(rt, ns, req.name, propagation, dry_run, options.get("preconditions"))
            return code, body
        return 200, c.delete_collection(rt, ns, req.query.get("labelSelector", ""), req.query.get("fieldSelector", ""), propagation, dry_run)

    def _scale(self, req, rt, manager, dry_run):
        c = self.cluster
        with c.lock:
            obj = c.get(rt, req.namespace, req.name)
            if req.verb in ("update", "patch"):
                scale = _scale_of(obj)
                if req.verb == "update":
                    new_scale = req.json_body() or {}
                else:
                    ctype = (req.headers.get("Content-Type") or "").split(";")[0].strip()
                    from .patch import json_patch, merge_patch
                    body = req.json_body()
                    new_scale = json_patch(scale, body) if ctype == "application/json-patch+json" else merge_patch(scale, body)
                obj["spec"]["replicas"] = (new_scale.get("spec") or {}).get("replicas", 0)
                obj, _ = c.update(rt, req.namespace, req.name, obj, manager, dry_run, "scale")
            return 200, _scale_of(obj)

    def _dry_run(self, req):
        value = req.query.get("dryRun")
        if value in (None, ""):
            return False
        if value != "All":
            raise errors.invalid("DryRun", None, [("dryRun", "FieldValueNotSupported", f'Unsupported value: "{value}": supported values: "All"')])
        return True

    def _authorize(self, req, rt, verb=None):
        plural = f"{rt.plural}/{req.subresource}" if req.subresource else rt.plural
        ns = req.namespace if rt.namespaced else None
        verb = verb or req.verb
        if not authz.allowed(self.cluster, req.user, verb, rt.group, plural, ns, req.name):
            # the real server's attributes of a request for a Namespace name it as the namespace too
            where = req.name if verb == "create" and rt.kind == "Namespace" and rt.crd is None else ns
            raise errors.forbidden(req.user.name, verb, None, where, req.name, rt.group, plural)


def _scale_of(obj):
    meta = obj["metadata"]
    selector = (obj.get("spec") or {}).get("selector") or {}
    sel = ",".join(f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items()))
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta},
            "spec": {"replicas": obj["spec"].get("replicas", 0)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0), "selector": sel}}


def _manager_from_agent(agent):
    return (agent or "unknown").split("/")[0][:128]


def _load_apply(body):
    fast = _json_as_yaml(body)
    if fast is not _NOT_JSON:
        return fast
    try:
        return yaml.safe_load(body or b"")
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from exc


_NOT_JSON = object()
# JSON texts that YAML (PyYAML's SafeLoader) reads differently or refuses: a key and its ':' on different
# lines or far apart, surrogate-pair escapes (YAML keeps the halves), tabs (no YAML token starts with one).
_YAML_RISKS = re.compile(rb'"[ \r\n]*[\r\n][ \r\n]*:|"[ \r\n]{32,}:|\\u[dD][89abAB]|\t')
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE


class _Unlike(Exception):
    """A JSON value YAML would read differently."""


def _yaml_float(text):
    if "e" in text or "E" in text:  # YAML 1.1 floats need a '.' and a signed exponent; '1e5' is a string there
        raise _Unlike
    return float(text)


def _unlike(_text):
    raise _Unlike  # NaN / Infinity: strings in YAML


def _short_keys(pairs):
    for key, _ in pairs:
        if len(key) > 128:  # YAML refuses implicit keys longer than 1024 characters
            raise _Unlike
    return dict(pairs)


def _json_as_yaml(body):
    """``yaml.safe_load(body)`` for the JSON bodies (what clients send as apply patches) where JSON and
    YAML agree, at JSON speed; ``_NOT_JSON`` when unsure (then YAML decides)."""
    if not body:
        return _NOT_JSON
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return _NOT_JSON
    if _YAML_RISKS.search(body) or _NON_PRINTABLE.search(text):
        return _NOT_JSON
    try:
        return json.loads(text, parse_float=_yaml_float, parse_constant=_unlike, object_pairs_hook=_short_keys)
    except (ValueError, _Unlike, RecursionError):
        return _NOT_JSON


def watch_stream(sim, handler, req, rt):
    """Serve a watch as a chunked stream of JSON events until timeout or shutdown."""
    from .selectors import field_match, label_match, parse_field_selector, parse_label_selector

    c = sim.cluster
    labels = parse_label_selector(req.query.get("labelSelector", ""))
    fsel = parse_field_selector(req.query.get("fieldSelector", ""), rt.kind)
    ns = req.namespace if rt.namespaced else None
    timeout = float(req.query.get("timeoutSeconds") or 1800)
    deadline = time.monotonic() + timeout
    since = req.query.get("resourceVersion") or "0"

    def wanted(obj):
        meta = obj["metadata"]
        return (not ns or meta.get("namespace") == ns) and label_match(meta.get("labels"), labels) and field_match(obj, fsel)

    with c.lock:
        initial = []
        if since == "0":
            listing = c.list(rt, ns)
            since = listing["metadata"]["resourceVersion"]
            initial = [c.view(rt, c._find(rt, i["metadata"].get("namespace"), i["metadata"]["name"])) for i in listing["items"]]
        since = int(since)
        c.watch_events(since, 0)
    handler.start_stream()
    handler.close_connection = True
    try:
        for obj in initial:
            if wanted(obj):
                handler.send_chunk(json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n")
        while not sim.stopping and time.monotonic() < deadline:
            for rv, etype, key, obj in c.watch_events(since, min(0.5, max(0.0, deadline - time.monotonic()))):
                since = rv
                if key == rt.key and wanted(obj):
                    out = dict(obj)
                    out["apiVersion"] = rt.api_version
                    handler.send_chunk(json.dumps({"type": etype, "object": out}).encode() + b"\n")
        handler.send_chunk(b"")
    except (BrokenPipeError, ConnectionResetError):
        pass
