"""Kubernetes ``Status`` errors, raised as exceptions and rendered by the HTTP layer."""


class ApiError(Exception):
    """An API error carrying a ``Status`` body; ``raw`` bodies are sent verbatim as text/plain."""

    def __init__(self, code, reason, message, details=None, headers=None, raw=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.raw = raw

    def status(self):
        """The ``Status`` object as a dict."""
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message,
                "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        if not self.reason:
            del body["reason"]
        return body


def _details(rt, name=None, kind_plural=True):
    d = {}
    if name is not None:
        d["name"] = name
    if rt is not None:
        if rt.group:
            d["group"] = rt.group
        d["kind"] = rt.plural if kind_plural else rt.kind
    return d


def not_found(rt, name):
    """404 NotFound for a named object."""
    return ApiError(404, "NotFound", f'{_qualified(rt)} "{name}" not found', _details(rt, name))


def namespace_not_found(name):
    """404 for a namespaced request in a missing namespace."""
    return ApiError(404, "NotFound", f'namespaces "{name}" not found', {"name": name, "kind": "namespaces"})


def unknown_resource():
    """404 for a path that names no served resource in a served group/version."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def page_not_found():
    """Plain-text 404 for a group/version that is not served at all."""
    return ApiError(404, "NotFound", "404 page not found", raw="404 page not found\n")


def service_unavailable():
    """Plain-text 503 for a group/version of an aggregated API no server answers for."""
    return ApiError(503, "ServiceUnavailable", "service unavailable", raw="service unavailable\n")


def already_exists(rt, name):
    """409 AlreadyExists."""
    return ApiError(409, "AlreadyExists", f'{_qualified(rt)} "{name}" already exists', _details(rt, name))


def conflict(rt, name, why="the object has been modified; please apply your changes to the latest version and try again"):
    """409 Conflict for optimistic concurrency failures."""
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(rt)} "{name}": {why}', _details(rt, name))


def apply_conflict(conflicts):
    """409 Conflict from server-side apply; conflicts is a list of (field, manager, apiVersion)."""
    causes = [{"reason": "FieldManagerConflict", "message": f'conflict with "{m}" using {v}', "field": f} for f, m, v in conflicts]
    if len(conflicts) == 1:
        f, m, v = conflicts[0]
        msg = f'Apply failed with 1 conflict: conflict with "{m}" using {v}: {f}'
    else:
        lines = "".join(f'\n- conflict with "{m}" using {v}: {f}' for f, m, v in conflicts)
        msg = f"Apply failed with {len(conflicts)} conflicts: conflicts with {_managers(conflicts)}:{lines}"
    return ApiError(409, "Conflict", msg, {"causes": causes})


def _managers(conflicts):
    names = sorted({m for _, m, _ in conflicts})
    return ", ".join(f'"{n}"' for n in names)


def invalid(kind, name, causes, group=None):
    """422 Invalid; causes is a list of (field, reason, message)."""
    detail = {"causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes], "kind": kind}
    if name:
        detail["name"] = name
    if group:
        detail["group"] = group
    summary = "; ".join(f"{f}: {m}" for f, _, m in causes) if len(causes) == 1 else "[" + ", ".join(f"{f}: {m}" for f, _, m in causes) + "]"
    qual = f"{kind}.{group}" if group else kind
    return ApiError(422, "Invalid", f'{qual} "{name or ""}" is invalid: {summary}', detail)


def bad_request(message):
    """400 BadRequest without details."""
    return ApiError(400, "BadRequest", message)


def forbidden(user, verb, rt, namespace, name=None, group=None, plural=None):
    """403 Forbidden with the real server's RBAC message."""
    group = rt.group if rt is not None else group
    plural = rt.plural if rt is not None else plural
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    qualified = f"{plural.split('/')[0]}.{group}" if group else plural.split("/")[0]  # the GroupResource, as the real server names it
    subject = f'{qualified} "{name}"' if name else qualified
    details = {"kind": plural}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    msg = f'{subject} is forbidden: User "{user}" cannot {verb} resource "{plural}" in API group "{group}" {where}'
    return ApiError(403, "Forbidden", msg, details)


def namespace_terminating(rt, name, namespace):
    """403 for creating content in a terminating namespace."""
    details = _details(rt, name)
    details["causes"] = [{"reason": "NamespaceTerminating", "message": f"namespace {namespace} is being terminated", "field": "metadata.namespace"}]
    msg = f'{_qualified(rt)} "{name}" is forbidden: unable to create new content in namespace {namespace} because it is being terminated'
    return ApiError(403, "Forbidden", msg, details)


def unauthorized():
    """401 for a missing or unknown bearer token."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def too_many_requests(retry_after):
    """429 with Retry-After, as API priority and fairness sends it."""
    return ApiError(429, "TooManyRequests", "Too many requests, please try again later.", {"retryAfterSeconds": retry_after},
                    headers={"Retry-After": str(retry_after)})


def internal_error(message="Internal error occurred: injected fault"):
    """500 InternalError."""
    return ApiError(500, "InternalError", message, {"causes": [{"message": message}]})


def method_not_allowed(rt, verb):
    """405 for a verb a resource does not support."""
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", _details(rt))


def gone(message):
    """410 Expired (too old resourceVersion / continue token)."""
    return ApiError(410, "Expired", message)


def _qualified(rt):
    if rt is None:
        return "resource"
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural
