# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small, thread-safe Kubernetes API client: raw JSON over one urllib3 connection pool.

Why not the ``kubernetes`` package's API classes: they deserialize into model objects, open a pool
per ``ApiClient`` and are slow for thousands of objects (importing them alone costs 0.1-0.14 s of
CPU per run, see docs/architecture.md). Credentials are loaded by :mod:`.auth` (kubeconfig parsed
there, exec plugins run by :mod:`.execcred`; the package only for auth-provider plugins and in-cluster
config); every request goes through
:class:`KubeClient`, which owns a single ``urllib3.PoolManager`` sized for the worker threads.

Retries: 429 (honouring ``Retry-After``), 5xx and connection errors are retried with bounded
exponential backoff, within a time budget (``retry_budget`` seconds per request, counted from its
first attempt): a server that accepts connections and never answers fails a run in about
``request_timeout + retry_budget`` seconds, not minutes. Answers that a retry cannot change are
not retried: TLS certificate rejections and the server's deterministic 500s (a body that cannot be
converted to the object's schema: "failed to create typed patch object"). Every request we send is idempotent at the API level (server-side apply, GET,
DELETE -- a retried DELETE may answer 404, which callers treat as "gone"; a retried create of the
Lease may answer 409, which the lock handles).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import email.utils
import json
import random
import re
import threading
import time

from ansible_collections.stacksync.k8s.plugins.module_utils.base import jsonload
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import redact_url
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.transport import (
    CERTIFICATE_REJECTED,
    ca_hint,
    connection_words,
    pool_manager,
    unreachable,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.wire import lane_for

try:
    from urllib.parse import quote, urlencode
except ImportError:  # pragma: no cover - Python 2 is not supported, keeps sanity happy
    from urllib import quote, urlencode  # type: ignore

try:
    import urllib3
    from urllib3._collections import HTTPHeaderDict

    HAS_URLLIB3 = True
    URLLIB3_IMPORT_ERROR = None
except ImportError as _e:  # pragma: no cover
    HAS_URLLIB3 = False
    URLLIB3_IMPORT_ERROR = _e

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
JSON = "application/json"
RETRY_STATUSES = (429, 500, 502, 503, 504)
#: request timeout (connect and read, seconds) and retry budget (seconds) unless the caller says otherwise
DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_RETRY_BUDGET = 20.0
#: 500 answers that say the request itself is wrong (the same body gets the same answer)
DETERMINISTIC_500 = ("failed to create typed patch object", "failed to create manager for existing fields",
                     "failed to convert new object")
_NOT_OFFERED = object()


def _deterministic(status, data):
    """True for an error answer that a retry cannot change (see :data:`DETERMINISTIC_500`)."""
    if status != 500 or not data:
        return False
    text = data[:4096].decode("utf-8", "replace")
    return any(marker in text for marker in DETERMINISTIC_500)


def _tls_refused(error):
    """True for a TLS failure a retry cannot change: the certificate rejected, or a server that does not speak TLS
    (as opposed to a dropped or reset connection)."""
    text = str(error).lower()
    return isinstance(error, urllib3.exceptions.SSLError) and ("certificate verify failed" in text or "wrong version number" in text)


#: what a 401 means, added to the server's own words (it says "Unauthorized" and nothing else)
UNAUTHORIZED_HINT = (" (the server did not accept the credentials: check the token, client certificate or credential "
                     "plugin of the kubeconfig's user or of the connection options, and whether they expired)")


#: how kube-apiserver's validation says that an update may not change a field (pkg/apis/*/validation):
#: ``field is immutable`` (apimachinery's FieldImmutableErrorMsg: a Deployment's or Job's selector, a Job's template, a
#: Secret's type, a ConfigMap or Secret set ``immutable``), ``... is immutable after creation`` (a bound claim's spec),
#: ``may not change once set`` (a Service's clusterIP(s)), ``cannot change roleRef`` (a RoleBinding's), a kind that
#: allows only some fields to change refusing the others whole (``updates to statefulset spec for fields other than
#: 'replicas', ... are forbidden``, ``pod updates may not change fields other than ...``), ``updates to parameters are
#: forbidden`` (a StorageClass's)
_IMMUTABLE = re.compile(r"\bis immutable\b|\bmay not change once set\b|\bcannot change roleRef\b|"
                        r"\bfields other than\b|\bupdates to [\w.]+ are forbidden\b")


def immutable_message(message):
    """True if ``message`` (a Status cause's, or a whole Status message) refuses a change to an immutable field."""
    return bool(_IMMUTABLE.search(message or ""))


class ApiError(Exception):
    """An API request failed. ``status`` is the HTTP status (0 for connection errors)."""

    def __init__(self, status, reason="", message="", causes=None, method="", path=""):
        self.status = status
        self.reason = reason or ""
        self.message = message or ""
        self.causes = causes or []
        self.method = method
        self.path = path
        super(ApiError, self).__init__(self.describe())

    def __str__(self):
        return self.describe()  # when said: the caller's words of the options, not those of where it was raised

    def describe(self):
        if not self.status:  # no answer from the server (connection, TLS, credentials): the message says it all
            text = self.message or self.reason or "(no message)"
            if self.reason == "TLSError" and CERTIFICATE_REJECTED in text:
                # said as the run that reports it names the options (a read ahead may fail before the run speaks)
                text += ca_hint()
            return text
        text = "%s %s: %s" % (self.status, self.reason or "Error", self.message or "(no message)")
        if self.status == 401:  # the server says no more than "Unauthorized"
            text += UNAUTHORIZED_HINT
        return text

    @property
    def is_not_found(self):
        return self.status == 404

    @property
    def is_conflict(self):
        return self.status == 409

    @property
    def is_forbidden(self):
        return self.status == 403

    def immutable_fields(self):
        """Fields the server refused to change because they are immutable ([] if not that error): the causes of a
        422 Invalid (400 from older servers) whose message says so in kube-apiserver's words
        (:func:`immutable_message`), or ``?`` when a Status without causes says it."""
        fields = []
        if self.status not in (400, 422):
            return fields
        for cause in self.causes:
            if immutable_message(cause.get("message") or ""):
                fields.append(cause.get("field") or "?")
        if not fields and not self.causes and immutable_message(self.message):
            fields.append("?")
        return fields

    @classmethod
    def from_response(cls, status, data, method="", path=""):
        body = None
        try:
            body = json.loads(data.decode("utf-8")) if data else None
        except (ValueError, UnicodeDecodeError):
            body = None
        if isinstance(body, dict) and body.get("kind") == "Status":
            details = body.get("details") or {}
            return cls(status, body.get("reason"), body.get("message"), details.get("causes"), method, path)
        text = ""
        if data:
            text = data[:300].decode("utf-8", "replace").strip()
        return cls(status, "", text, None, method, path)


class KubeClient:
    """Raw JSON client. Thread-safe; counts requests per method (``counts``) for tests and reports.

    :param server: API server URL (``https://host:port``).
    :param auth: callable returning a dict of auth headers (called per request so exec plugins and
        refreshed tokens keep working), or ``None``.
    :param headers: headers of every request (a dict, or ``(name, value)`` pairs for repeated headers).
    :param pool_kwargs: TLS keyword arguments for urllib3 (see :func:`.transport.tls_pool_kwargs`).
    """

    def __init__(self, server, auth=None, headers=None, pool_kwargs=None, proxy=None, proxy_headers=None,
                 impersonate_groups=None, maxsize=8, max_attempts=6, backoff=0.2, max_backoff=10.0,
                 timeout=DEFAULT_REQUEST_TIMEOUT, retry_budget=DEFAULT_RETRY_BUDGET):
        self.server = server.rstrip("/")
        self._auth = auth
        # (name, value) pairs: a header may repeat (Impersonate-Group)
        self._headers = list(headers.items() if isinstance(headers, dict) else headers or ())
        self._headers += [("Impersonate-Group", group) for group in impersonate_groups or ()]
        kwargs = dict(pool_kwargs or {})
        kwargs["maxsize"] = max(int(maxsize), 1)
        kwargs["block"] = True
        connect, read = timeout if isinstance(timeout, (tuple, list)) else (timeout, timeout)
        kwargs["timeout"] = urllib3.Timeout(connect=float(connect), read=float(read))
        self._pool = pool_manager(proxy, proxy_headers, kwargs)
        # requests written and answers read by the collection on urllib3's connections (None through a proxy)
        self._lane = lane_for(self._pool, self.server, kwargs["maxsize"], kwargs["timeout"].read_timeout, proxy)
        self.max_attempts = max_attempts
        self.retry_budget = float(retry_budget)
        self.clock = time.monotonic
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._lock = threading.Lock()
        self.counts = {}
        self.sleep = time.sleep
        self._offers = {}  # requests made ahead (:meth:`offer`)
        #: ``on_write(method, path, params, body)``, told before and after each request that is not a GET (or None)
        self.on_write = None
        # the API server's time: the latest ``Date`` header of its answers (seconds since the epoch), for the prune
        # grace period (.grace), which never reads the controller's clock
        self.server_time = None
        self._date_text = None

    # -- accounting -------------------------------------------------------------------------
    def _count(self, method):
        with self._lock:
            self.counts[method] = self.counts.get(method, 0) + 1

    # -- requests ---------------------------------------------------------------------------
    def request(self, method, path, params=None, body=None, content_type=JSON, accept=JSON, raw=False,
                with_status=False, before_attempt=None):
        """Send one request; return the decoded JSON body (or ``(status, headers, bytes)`` if raw,
        ``(status, body)`` if with_status). ``before_attempt()`` runs before each attempt, retries
        included (the prune's lock proof: it raises to send nothing more).

        Raises :class:`ApiError` on a non-2xx answer after retries.
        """
        hook = self.on_write if method != "GET" else None
        if hook is None:
            return self._send(method, path, params, body, content_type, accept, raw, with_status, before_attempt)
        hook(method, path, params, body)  # told before and after: a read between the two may not see the write
        try:
            return self._send(method, path, params, body, content_type, accept, raw, with_status, before_attempt)
        finally:
            hook(method, path, params, body)

    def _send(self, method, path, params, body, content_type, accept, raw, with_status, before_attempt):
        """:meth:`request`, without telling :attr:`on_write`."""
        target = path
        if params:
            target += "?" + urlencode([(k, v) for k, v in params.items() if v is not None])
        headers = self.header_pairs(accept, content_type if body is not None else None)
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode("utf-8")
        attempt = 0
        started = self.clock()
        while True:
            attempt += 1
            if before_attempt is not None:
                before_attempt()
            self._count(method)
            try:
                status, answer, content = self.exchange(method, target, data, headers)
            except urllib3.exceptions.HTTPError as e:
                if _tls_refused(e):  # not transient: retrying only delays the same answer
                    raise ApiError(0, "TLSError", unreachable(self.server, connection_words(e)), None, method, path) from None
                if not self._may_retry(attempt, started):
                    raise ApiError(0, "ConnectionError", unreachable(self.server, connection_words(e), attempt,
                                                                     self.clock() - started), None, method, path) from None
                self._pause(attempt, None)
                continue
            self._saw_date(answer.get("Date"))
            if status in RETRY_STATUSES and self._may_retry(attempt, started) and not _deterministic(status, content):
                self._pause(attempt, answer.get("Retry-After"))
                continue
            if raw:
                return status, answer, content
            if status < 200 or status >= 300:
                raise ApiError.from_response(status, content, method, path)
            decoded = {}
            if content:
                try:
                    decoded = jsonload.loads(content)  # bytes: no copy as a str first
                except (ValueError, UnicodeDecodeError):
                    raise ApiError(status, "BadResponse", "response is not JSON", None, method, path) from None
            return (status, decoded) if with_status else decoded

    def header_pairs(self, accept=JSON, content_type=None):
        """The ``(name, value)`` headers of a request: the client's own (impersonation, the kubeconfig's), those of its
        credentials (asked now: a token may have been renewed) replacing any of the same name (case-insensitive),
        ``Accept``, and ``Content-Type`` if given."""
        headers = [*self._headers, ("Accept", accept)]
        if self._auth is not None:
            given = self._auth()
            if given:
                names = set(k.lower() for k in given)
                headers = [(k, v) for k, v in headers if k.lower() not in names] + list(given.items())
        if content_type is not None:
            headers.append(("Content-Type", content_type))
        return headers

    def exchange(self, method, target, data, headers):
        """One attempt of a request: ``(status, headers, body bytes)``; urllib3's exceptions.

        :param target: the path and query. :param headers: ``(name, value)`` pairs.
        The collection's own reading and writing on urllib3's connections (:mod:`.wire`), or through a proxy
        urllib3's whole request.
        """
        if self._lane is not None:
            return self._lane.exchange(method, target, headers, data)
        resp = self._pool.request(method, self.server + target, body=data, headers=HTTPHeaderDict(headers),
                                  retries=False, preload_content=True, redirect=False)
        return resp.status, resp.headers, resp.data

    def _saw_date(self, text):
        """Keep the latest server time a ``Date`` header says (parsed once per value: it changes once a second)."""
        if not text or text == self._date_text:
            return
        self._date_text = text
        try:
            stamp = email.utils.parsedate_to_datetime(text).timestamp()
        except (TypeError, ValueError, IndexError, AttributeError):
            return
        if self.server_time is None or stamp > self.server_time:
            self.server_time = stamp

    def _may_retry(self, attempt, started):
        """Another attempt is allowed: attempts left and the request's retry budget not spent."""
        return attempt < self.max_attempts and self.clock() - started < self.retry_budget

    def _pause(self, attempt, retry_after):
        delay = None
        with contextlib.suppress(TypeError, ValueError):
            delay = float(retry_after) if retry_after else None
        if delay is None:
            delay = self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random() / 2)
        self.sleep(min(max(delay, 0.0), self.max_backoff))

    # -- verbs ------------------------------------------------------------------------------
    def offer(self, key, future):
        """An answer read ahead (:mod:`.prefetch`): the next :meth:`list` or :meth:`get_or_none` with ``key``
        (``("list", path, label_selector, limit)`` or ``("get", path)``) takes ``future``'s result (or ApiError) once."""
        with self._lock:
            self._offers[key] = future

    def _offered(self, key):
        with self._lock:
            future = self._offers.pop(key, None) if self._offers else None
        try:
            return _NOT_OFFERED if future is None else future.result()
        except ApiError:  # the server's answer: as if asked now
            raise
        except Exception:  # a fault of the read ahead: asked again
            return _NOT_OFFERED

    def get(self, path, params=None):
        return self.request("GET", path, params=params)

    def get_or_none(self, path):
        offered = self._offered(("get", path))
        return self.get_now(path) if offered is _NOT_OFFERED else offered

    def get_now(self, path):
        """:meth:`get_or_none` from the server, whatever was offered."""
        try:
            return self.get(path)
        except ApiError as e:
            if e.is_not_found:
                return None
            raise

    def list(self, path, label_selector=None, limit=500):
        """All items of a collection (follows ``continue``); items get ``apiVersion``/``kind`` set."""
        offered = self._offered(("list", path, label_selector, limit))
        return self.list_now(path, label_selector, limit) if offered is _NOT_OFFERED else offered

    def list_now(self, path, label_selector=None, limit=500):
        """:meth:`list` from the server, whatever was offered."""
        return [item for page in self.pages(path, label_selector, limit) for item in page]

    def pages(self, path, label_selector=None, limit=500):
        """The items of a collection page by page (a generator: stop early to read no further pages)."""
        params = {"limit": str(limit)}
        if label_selector:
            params["labelSelector"] = label_selector
        while True:
            page = self.get(path, params)
            kind = page.get("kind") or ""
            if kind.endswith("List"):
                kind = kind[:-4]
            items = page.get("items") or []
            for item in items:
                item.setdefault("apiVersion", page.get("apiVersion"))
                item.setdefault("kind", kind)
            yield items
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            params = dict(params, **{"continue": token})

    def apply(self, path, manifest, field_manager, force=False, dry_run=False, with_status=False):
        """Server-side apply (``PATCH`` with ``application/apply-patch+yaml``; JSON is valid YAML).

        With ``with_status`` returns ``(status, object)``: 201 means the apply created the object.
        """
        params = {"fieldManager": field_manager}
        if force:
            params["force"] = "true"
        if dry_run:
            params["dryRun"] = "All"
        return self.request("PATCH", path, params=params, body=manifest, content_type=APPLY_PATCH,
                            with_status=with_status)

    def create(self, path, body, dry_run=False):
        return self.request("POST", path, params={"dryRun": "All"} if dry_run else None, body=body)

    def replace(self, path, body):
        return self.request("PUT", path, body=body)

    def delete(self, path, propagation_policy=None, preconditions=None, dry_run=False, before_attempt=None):
        body = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if preconditions:
            body["preconditions"] = preconditions
        kwargs = {"before_attempt": before_attempt} if before_attempt is not None else {}
        return self.request("DELETE", path, params={"dryRun": "All"} if dry_run else None, body=body, **kwargs)

    def close(self):
        with contextlib.suppress(Exception):
            if self._lane is not None:
                self._lane.close()
            self._pool.clear()


def quote_name(name):
    return quote(name, safe="")


def _safe(exc):
    """A connection error message without URL credentials (``user:password@`` masked), at most 300 characters."""
    return redact_url(str(exc), mask="********")[:300]
