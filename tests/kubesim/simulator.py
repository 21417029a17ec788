"""The :class:`Simulator`: an HTTP(S) Kubernetes API server on 127.0.0.1 backed by :class:`Cluster`."""

import atexit
import base64
import collections
import hashlib
import os
import random
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

import yaml

from . import authz, errors
from .authz import DenyRule, User
from .cluster import Cluster
from .server import Handler, Router, parse_resource_path, verb_of, watch_stream

_PLACEHOLDER_CA = ("-----BEGIN CERTIFICATE-----\nMIIBkubesimPlaceholderCertificateNotUsedForTLSInPlainHTTPMode0000\n"
                   "-----END CERTIFICATE-----\n")
_PKI_LOCK = threading.Lock()
_PKI = {}


@dataclass
class Faults:
    """Seeded fault injection; rates are probabilities per request, keyed by verb or ``*``.

    ``error_rate``: answer ``error_code`` (500 InternalError by default);
    ``throttle_rate``: start a burst of ``throttle_burst`` 429 answers with ``Retry-After: retry_after``;
    ``drop_rate``: close the connection without answering; ``latency_ms`` added to every request,
    plus ``spike_ms`` with probability ``spike_rate``. Discovery/openapi/health requests are exempt
    unless ``include_discovery``.
    """

    error_rate: dict[str, float] = field(default_factory=dict)
    error_code: int = 500
    throttle_rate: float = 0.0
    throttle_burst: int = 1
    retry_after: int = 1
    drop_rate: dict[str, float] = field(default_factory=dict)
    latency_ms: float = 0.0
    spike_rate: float = 0.0
    spike_ms: float = 0.0
    include_discovery: bool = False
    seed: int = 0


def _rate(table, verb):
    return table.get(verb, table.get("*", 0.0))


def _pki():
    """A CA and a 127.0.0.1 server certificate, generated once per process with openssl."""
    with _PKI_LOCK:
        if not _PKI:
            d = tempfile.mkdtemp(prefix="kubesim-pki-")
            atexit.register(shutil.rmtree, d, True)
            ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            with open(os.path.join(d, "san.ext"), "w") as f:
                f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
            # a CA with keyUsage (Python 3.13's default verification requires it), as a real cluster's CA has
            ca_ext = ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
            for cmd in (["req", "-x509", *ec, *ca_ext, "-keyout", "ca.key", "-out", "ca.crt", "-days", "30",
                         "-subj", "/CN=kubesim-ca"],
                        ["req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=kubesim"],
                        ["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt",
                         "-days", "30", "-extfile", "san.ext"]):
                subprocess.run(["openssl", *cmd], cwd=d, check=True, capture_output=True)
            _PKI.update(dir=d, ca=os.path.join(d, "ca.crt"), cert=os.path.join(d, "server.crt"), key=os.path.join(d, "server.key"))
        return dict(_PKI)


def _client_certificate(directory, user, groups):
    """A client certificate for ``user`` (CN) in ``groups`` (O), signed by the simulators' CA: ``(cert, key)`` paths."""
    pki = _pki()
    subject = "/CN=" + user + "".join("/O=" + g for g in groups)
    base = os.path.join(directory, f"client-{secrets.token_hex(4)}")
    for cmd in (["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", base + ".key",
                 "-out", base + ".csr", "-subj", subject],
                ["x509", "-req", "-in", base + ".csr", "-CA", pki["ca"], "-CAkey", os.path.join(pki["dir"], "ca.key"),
                 "-CAcreateserial", "-CAserial", base + ".srl", "-out", base + ".crt", "-days", "2"]):
        subprocess.run(["openssl", *cmd], check=True, capture_output=True)
    return base + ".crt", base + ".key"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, sim, tls_context):
        self.sim = sim
        self.tls_context = tls_context
        super().__init__(addr, Handler)

    def get_request(self):
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls_context is not None:
            sock = self.tls_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        """Client disconnects are normal (dropped-connection faults, killed clients)."""


class Simulator:
    """A simulated kube-apiserver. Use :meth:`start` / :meth:`stop` or a ``with`` block."""

    def __init__(self, port=0, tls=False, kubeconfig_path=None, latency_ms=0.0, crd_establish_delay=0.1, pods_ready=True,
                 token=None, seed=0, max_log=100000):
        self.port = port
        self.tls = tls
        self.requested_kubeconfig = kubeconfig_path
        self.crd_establish_delay = crd_establish_delay
        self.pods_ready = pods_ready
        self.token = token or secrets.token_hex(16)
        self.limited_token = secrets.token_hex(16)
        self.restricted_token = secrets.token_hex(16)
        self.users = {}
        self._legacy_impersonators = set()  # requestors whose last impersonation succeeded in the legacy mode
        self.faults = Faults(latency_ms=latency_ms, seed=seed)
        self._rng = random.Random(seed)
        self._throttle_left = 0
        self._scripted = collections.deque()
        self._log_lock = threading.Lock()
        self.requests = collections.deque(maxlen=max_log)
        self.counters = collections.Counter()
        self.stopping = False
        self.httpd = None
        self.thread = None
        self.workdir = None
        self.cluster = None
        self.router = None
        self.ca_cert = None
        self.kubeconfig_path = None
        self.limited_kubeconfig_path = None
        self.restricted_kubeconfig_path = None

    # ------------------------------------------------------------ lifecycle
    def start(self):
        """Bind, start serving on a background thread and write the kubeconfig files; returns self."""
        context = None
        ca_pem = _PLACEHOLDER_CA
        if self.tls:
            pki = _pki()
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(pki["cert"], pki["key"])
            context.verify_mode = ssl.CERT_OPTIONAL  # client certificates signed by the CA authenticate (--client-ca-file)
            context.load_verify_locations(pki["ca"])
            self.ca_cert = pki["ca"]
            with open(pki["ca"]) as f:
                ca_pem = f.read()
        self.cluster = Cluster(self.crd_establish_delay, self.pods_ready, ca_pem)
        self.router = Router(self)
        self.users = {self.token: User("admin", ["system:masters"], admin=True),
                      self.limited_token: User("limited"),
                      self.restricted_token: User("restricted", ["system:masters"], admin=True, deny=[
                          DenyRule(["list", "watch"], ["secrets"], [""]), DenyRule(["delete"], ["clusterroles"])])}
        self.httpd = _Server(("127.0.0.1", self.port), self, context)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True, name=f"kubesim-{self.port}")
        self.thread.start()
        self.workdir = tempfile.mkdtemp(prefix="kubesim-")
        self.kubeconfig_path = self.requested_kubeconfig or os.path.join(self.workdir, "kubeconfig")
        self.write_kubeconfig(self.kubeconfig_path, "admin", self.token)
        self.limited_kubeconfig_path = self.write_kubeconfig(os.path.join(self.workdir, "limited.kubeconfig"), "limited", self.limited_token)
        self.restricted_kubeconfig_path = self.write_kubeconfig(os.path.join(self.workdir, "restricted.kubeconfig"), "restricted",
                                                                self.restricted_token)
        return self

    def stop(self):
        """Stop serving, end watches and remove temporary files."""
        self.stopping = True
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
        if self.cluster is not None:
            self.cluster.close()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self):
        """Base URL of the API."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def address(self):
        """host:port."""
        return f"127.0.0.1:{self.port}"

    def write_kubeconfig(self, path, user, token):
        """Write a kubeconfig for ``token`` (current-context set, namespace default); returns the path."""
        cluster = {"server": self.url}
        if self.ca_cert:
            with open(self.ca_cert, "rb") as f:
                cluster["certificate-authority-data"] = base64.b64encode(f.read()).decode()
        doc = {"apiVersion": "v1", "kind": "Config", "preferences": {},
               "clusters": [{"name": "kubesim", "cluster": cluster}],
               "users": [{"name": user, "user": {"token": token}}],
               "contexts": [{"name": f"{user}@kubesim", "context": {"cluster": "kubesim", "user": user, "namespace": "default"}}],
               "current-context": f"{user}@kubesim"}
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
        return path

    # ------------------------------------------------------------ test API
    def add_user(self, name, token=None, groups=(), admin=False, deny=()):
        """Register a bearer token; returns the token. ``deny``: DenyRule objects or dicts."""
        token = token or secrets.token_hex(16)
        rules = [d if isinstance(d, DenyRule) else DenyRule(**d) for d in deny]
        self.users[token] = User(name, list(groups), admin, rules)
        return token

    def issue_client_certificate(self, user, groups=()):
        """``(cert path, key path)`` of a client certificate this simulator authenticates as ``user`` in ``groups``
        (what an approved CertificateSigningRequest of signer ``kubernetes.io/kube-apiserver-client`` gives)."""
        return _client_certificate(self.workdir, user, list(groups))

    def deny(self, token, verbs, resources, namespaces=None):
        """Add a deny rule to the user of ``token``."""
        self.users[token].deny.append(DenyRule(list(verbs), list(resources), namespaces))

    def configure_faults(self, **kwargs):
        """Replace the fault configuration (see :class:`Faults`) and reseed."""
        kwargs.setdefault("latency_ms", 0.0)
        self.faults = Faults(**kwargs)
        with self._log_lock:
            self._rng = random.Random(self.faults.seed)
            self._throttle_left = 0
            self._scripted.clear()

    def fail_next(self, count=1, code=500, verb=None, retry_after=1, drop=False):
        """Deterministically fail the next ``count`` resource requests (optionally only of ``verb``)."""
        with self._log_lock:
            for _ in range(count):
                self._scripted.append({"code": code, "verb": verb, "retry_after": retry_after, "drop": drop})

    def reset_counters(self):
        """Clear the request log and counters."""
        with self._log_lock:
            self.requests.clear()
            self.counters.clear()

    def count(self, verb=None, resource=None):
        """Number of logged requests matching verb and/or resource (``plural`` or ``group/plural``)."""
        with self._log_lock:
            return sum(n for (v, r), n in self.counters.items() if (verb is None or v == verb) and (resource is None or r == resource))

    def dump(self):
        """All stored objects, by resource."""
        return self.cluster.dump()

    def settle(self, timeout=5.0):
        """Wait until pending CRD establishment timers have fired."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(t.is_alive() for t in self.cluster._timers):
            time.sleep(0.01)

    # ------------------------------------------------------------ requests
    def handle(self, handler, req):
        """Serve one request (called on the connection's thread)."""
        started = time.monotonic()
        code = 0
        logged = []

        def log_once(status):
            if not logged:
                logged.append(status)
                self._log(req, status, started)
        handler.on_respond = log_once
        try:
            is_resource = parse_resource_path(req)
            if is_resource:
                req.verb = verb_of(req)
            action = self._fault(req, is_resource)
            if action == "drop":
                handler.close_connection = True
                code = -1
                return
            if action is not None:
                raise action
            if req.path not in ("/healthz", "/livez", "/readyz", "/version"):
                req.user = self._authenticate(req)
                if req.user.name == authz.ANONYMOUS and not is_resource:  # system:discovery is for authenticated users
                    raise errors.ApiError(403, "Forbidden", f'forbidden: User "{authz.ANONYMOUS}" cannot get path "{req.path}"', {})
            if not is_resource:
                answer = self.router.non_resource(req)
                if answer is None:
                    raise errors.page_not_found()
                code, payload, ctype = answer
                handler.send_json(code, payload, {"X-Varied-Accept": req.headers.get("Accept") or ""} if ctype != "application/json" else None, ctype)
                return
            self.router.resource(handler, req)
            code = handler.last_code
        except errors.ApiError as err:
            code = err.code
            handler.send_error_status(err)
        except (BrokenPipeError, ConnectionResetError):
            code = -1
        except Exception as exc:
            code = 500
            handler.send_error_status(errors.internal_error(f"kubesim: {type(exc).__name__}: {exc}"))
        finally:
            log_once(code)

    def _authenticate(self, req):
        """The caller, as kube-apiserver's authenticators find it: a client certificate the CA signed (CN the
        user, O its groups) before a bearer token; no credentials at all is ``system:anonymous`` (the real
        server's default ``--anonymous-auth``); an unknown token is 401."""
        user = self._from_certificate(req.peer_cert)
        auth = req.headers.get("Authorization") or ""
        if user is None and auth:
            user = self.users.get(auth[7:].strip()) if auth.startswith("Bearer ") else None
            if user is None:
                raise errors.unauthorized()
        if user is None:
            user = User(authz.ANONYMOUS)
        return self._impersonate(req, user)

    @staticmethod
    def _from_certificate(peer):
        """The user of a client certificate: CN its name, each O a group, its SHA-256 its credential id."""
        if not peer:
            return None
        cert, der = peer
        subject = [pair for rdn in cert.get("subject", ()) for pair in rdn]
        name = next((v for k, v in subject if k == "commonName"), "")
        groups = [v for k, v in subject if k == "organizationName"]
        extra = {"authentication.kubernetes.io/credential-id": ["X509SHA256=" + hashlib.sha256(der).hexdigest()]}
        return User(name, groups, "system:masters" in groups, extra=extra) if name else None

    def _impersonate(self, req, user):
        """``Impersonate-User`` / ``-Uid`` / ``-Group`` / ``-Extra-<key>``, as kube-apiserver's impersonation
        filter: the caller needs the ``impersonate`` verb on ``users`` (``serviceaccounts`` in its namespace for
        a service account), ``groups``, ``uids`` and ``userextras/<key>`` (group ``authentication.k8s.io``); the
        request is then authorized as the impersonated user alone (a service account impersonated without
        groups gets the ``system:serviceaccounts`` groups). Uid, groups or extra without a user is 400.
        v1.36's constrained impersonation tries its modes in turn and remembers, per requestor, the mode that last
        worked: until the legacy mode (the ``impersonate`` verb) has worked for a requestor, a refusal names the first
        constrained mode, ``cannot impersonate-on:<user-info|serviceaccount>:<verb>`` on the requested resource;
        after, the legacy check that failed (pinned by tests/conformance/test_auth_conformance.py)."""
        get_all = getattr(req.headers, "get_all", None)
        name, uid = req.headers.get("Impersonate-User") or "", req.headers.get("Impersonate-Uid") or ""
        groups = list(get_all("Impersonate-Group") or []) if get_all else []
        extra = _impersonated_extra(req.headers)
        if not name:
            if groups or uid or extra:
                who = f'&user.DefaultInfo{{Name:"", UID:"{uid}", Groups:{_go_list(groups)}, Extra:{_go_map(extra)}}}'
                raise errors.ApiError(400, "BadRequest", f"requested {who} without impersonating a user name")
            return user
        sa = name.split(":") if name.startswith("system:serviceaccount:") else None
        checks = [("", "serviceaccounts", sa[3], sa[2]) if sa and len(sa) == 4 else ("", "users", name, None)]
        checks += [("", "groups", g, None) for g in groups]
        checks += [("authentication.k8s.io", "uids", uid, None)] if uid else []
        checks += [("authentication.k8s.io", "userextras/" + k, v, None) for k, vs in extra.items() for v in vs]
        for group, plural, target, namespace in checks:
            if not authz.allowed(self.cluster, user, "impersonate", group, plural, namespace, target):
                if user.name not in self._legacy_impersonators and req.verb:
                    mode = "serviceaccount" if sa and len(sa) == 4 else "user-info"
                    raise errors.forbidden(user.name, f"impersonate-on:{mode}:{req.verb}", None, req.namespace,
                                           req.name, req.group, req.plural)
                raise errors.forbidden(user.name, "impersonate", None, namespace, target, group, plural)
        self._legacy_impersonators.add(user.name)
        if sa and len(sa) == 4 and not groups:
            groups = ["system:serviceaccounts", "system:serviceaccounts:" + sa[2]]
        return User(name, groups, "system:masters" in groups, [], uid, extra)

    def _fault(self, req, is_resource):
        """Decide an injected fault: None, "drop" or an ApiError to answer with."""
        f = self.faults
        if not is_resource and not f.include_discovery:
            return None
        verb = req.verb or "get"
        with self._log_lock:
            scripted = next((s for s in self._scripted if s["verb"] in (None, verb)), None) if is_resource else None
            if scripted is not None:
                self._scripted.remove(scripted)
            delay = f.latency_ms + (f.spike_ms if f.spike_rate and self._rng.random() < f.spike_rate else 0.0)
            if self._throttle_left == 0 and f.throttle_rate and self._rng.random() < f.throttle_rate:
                self._throttle_left = f.throttle_burst
            throttled = self._throttle_left > 0
            if throttled:
                self._throttle_left -= 1
            dropped = bool(_rate(f.drop_rate, verb)) and self._rng.random() < _rate(f.drop_rate, verb)
            failed = bool(_rate(f.error_rate, verb)) and self._rng.random() < _rate(f.error_rate, verb)
        if delay:
            time.sleep(delay / 1000.0)
        if scripted is not None:
            if scripted["drop"]:
                return "drop"
            return _error_for(scripted["code"], scripted["retry_after"])
        if throttled:
            return errors.too_many_requests(f.retry_after)
        if dropped:
            return "drop"
        if failed:
            return _error_for(f.error_code, f.retry_after)
        return None

    def _log(self, req, code, started):
        entry = {"time": time.time(), "method": req.method, "path": req.path, "query": req.query, "verb": req.verb,
                 "resource": req.resource_label if req.verb else None, "namespace": req.namespace, "name": req.name,
                 "code": code, "user": req.user.name if req.user else None, "ms": round((time.monotonic() - started) * 1000, 3),
                 "authorization": req.headers.get("Authorization"), "impersonate_user": req.headers.get("Impersonate-User"),
                 "content_type": req.headers.get("Content-Type"), "field_manager": req.query.get("fieldManager")}
        with self._log_lock:
            self.requests.append(entry)
            self.counters[(req.verb or "discovery", req.resource_label if req.verb else req.path)] += 1

    def stream_watch(self, handler, req, rt):
        """Serve a watch request."""
        watch_stream(self, handler, req, rt)

    # ------------------------------------------------------------- reviews
    def review(self, req, rt, body):
        """Answer authentication/authorization review requests for the calling user."""
        user = req.user
        out = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {}, "spec": body.get("spec") or {}}
        if rt.kind in ("SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview"):
            who = user
            if rt.kind != "SelfSubjectAccessReview":
                spec = body.get("spec") or {}
                who = User(spec.get("user", ""), spec.get("groups") or [], "system:masters" in (spec.get("groups") or []))
            attrs = out["spec"].get("resourceAttributes")
            if attrs is not None:
                plural = attrs.get("resource", "") + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
                ok = authz.allowed(self.cluster, who, attrs.get("verb", ""), attrs.get("group", ""), plural, attrs.get("namespace") or None,
                                   attrs.get("name"))
            else:
                ok = True
            out["status"] = {"allowed": ok}
        elif rt.kind == "SelfSubjectRulesReview":
            ns = out["spec"].get("namespace")
            rules = ([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}] if user.admin
                     else authz.rbac_rules(self.cluster, user, ns))
            out["spec"] = {}
            out["status"] = {"resourceRules": rules, "nonResourceRules": authz.NON_RESOURCE_RULES, "incomplete": False}
        elif rt.kind in ("SelfSubjectReview", "TokenReview"):
            target = user if rt.kind == "SelfSubjectReview" else self.users.get(out["spec"].get("token") or "")
            info = {"username": target.name, "groups": target.all_groups} if target else {}
            if target and target.uid:
                info["uid"] = target.uid
            if target and target.extra:
                info["extra"] = dict(target.extra)
            if rt.kind == "SelfSubjectReview":
                out["metadata"] = {"creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                out.pop("spec", None)
            out["status"] = {"userInfo": info} if rt.kind == "SelfSubjectReview" else {"authenticated": bool(target), "user": info}
        return out


def _impersonated_extra(headers):
    """``{key: [values]}`` of the ``Impersonate-Extra-<key>`` headers (keys lower-cased and %-decoded, as the real server)."""
    from urllib.parse import unquote

    extra = {}
    for key, value in headers.items():
        if key.lower().startswith("impersonate-extra-"):
            extra.setdefault(unquote(key[len("impersonate-extra-"):].lower()), []).append(value)
    return extra


def _go_list(values):
    inner = ", ".join(f'"{v}"' for v in values)
    return f"[]string{{{inner}}}" if values else "[]string(nil)"


def _go_map(extra):
    if not extra:
        return "map[string][]string(nil)"
    inner = ", ".join(f'"{k}":{_go_list(v)}' for k, v in sorted(extra.items()))
    return f"map[string][]string{{{inner}}}"


def _error_for(code, retry_after):
    if code == 429:
        return errors.too_many_requests(retry_after)
    if code == 500:
        return errors.internal_error()
    reasons = {503: "ServiceUnavailable", 504: "Timeout", 409: "Conflict", 403: "Forbidden", 404: "NotFound", 401: "Unauthorized"}
    return errors.ApiError(code, reasons.get(code, "InternalError"), f"injected fault ({code})", {}, headers={"Retry-After": str(retry_after)}
                           if code in (503, 429) else None)
