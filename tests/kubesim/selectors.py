"""Label and field selectors with the real server's grammar and error messages."""

import re

from .errors import bad_request

_SPECIAL = set(" \t\n,=!()<>")
_OPS = ("==", "!=", "=", "!", "(", ")", ",", "<", ">")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _lex(text):
    """Split a selector into (kind, literal) tokens; kind is 'id', 'op' or a keyword."""
    tokens, i = [], 0
    while i < len(text):
        c = text[i]
        if c in " \t\n":
            i += 1
            continue
        op = next((o for o in _OPS if text.startswith(o, i)), None)
        if op:
            tokens.append(("op", op))
            i += len(op)
            continue
        j = i
        while j < len(text) and text[j] not in _SPECIAL:
            j += 1
        word = text[i:j]
        tokens.append((word if word in ("in", "notin") else "id", word))
        i = j
    return tokens


class _Parser:
    def __init__(self, text):
        self.tokens = _lex(text)
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "")

    def take(self):
        tok = self.peek()
        self.pos += 1
        return tok

    def fail(self, found, expected):
        raise bad_request(f"unable to parse requirement: found '{found}' expected: {expected}")

    def parse(self):
        reqs = []
        while self.peek()[0] != "end":
            reqs.append(self.requirement())
            kind, lit = self.peek()
            if kind == "end":
                break
            if lit != ",":
                self.fail(lit, "','")
            self.take()
            if self.peek()[0] == "end":
                self.fail("", "identifier")
        return reqs

    def requirement(self):
        kind, lit = self.take()
        if lit == "!":
            kind, key = self.take()
            if kind != "id":
                self.fail(key, "identifier")
            return (key, "!", ())
        if kind != "id":
            self.fail(lit, "identifier")
        key = lit
        nkind, op = self.peek()
        if nkind == "end" or op == ",":
            return (key, "exists", ())
        self.take()
        if op in ("=", "==", "!="):
            vkind, value = self.peek()
            if vkind == "id":
                self.take()
            elif vkind == "end" or value == ",":
                value = ""
            else:
                self.fail(value, "identifier")
            self.check_value(value)
            return (key, "!=" if op == "!=" else "=", (value,))
        if op in ("<", ">"):
            vkind, value = self.take()
            if vkind != "id" or not value.lstrip("-").isdigit():
                raise bad_request("unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer")
            return (key, op, (value,))
        if nkind in ("in", "notin"):
            return (key, nkind, self.value_set())
        self.fail(op, "'=', '!=', '==', 'in', notin'")
        return None

    def value_set(self):
        kind, lit = self.take()
        if lit != "(":
            self.fail(lit, "'('")
        values = []
        while True:
            kind, lit = self.take()
            if lit == ")":
                return tuple(values)
            if kind == "id":
                self.check_value(lit)
                values.append(lit)
                kind, lit = self.take()
                if lit == ")":
                    return tuple(values)
                if lit != ",":
                    self.fail(lit, "',' or ')'")
            elif lit == ",":
                values.append("")
            else:
                self.fail(lit or "", "',', ')' or identifier")

    @staticmethod
    def check_value(value):
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            raise bad_request(f"unable to parse requirement: values[0]: Invalid value: \"{value}\": a valid label must be an empty string or "
                              "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character")


def parse_label_selector(text):
    """Parse a label selector string into a list of (key, op, values); raise 400 if malformed."""
    if not text or not text.strip():
        return []
    return _Parser(text).parse()


def _match_one(labels, req):
    key, op, values = req
    present = key in labels
    if op == "exists":
        return present
    if op == "!":
        return not present
    if op == "=":
        return present and labels[key] == values[0]
    if op == "!=":
        return not present or labels[key] != values[0]
    if op == "in":
        return present and labels[key] in values
    if op == "notin":
        return not present or labels[key] not in values
    if not present or not labels[key].lstrip("-").isdigit():
        return False
    return int(labels[key]) > int(values[0]) if op == ">" else int(labels[key]) < int(values[0])


def label_match(labels, reqs):
    """True if a label map satisfies every requirement."""
    labels = labels or {}
    return all(_match_one(labels, r) for r in reqs)


# Fields selectable per kind beyond metadata.name / metadata.namespace.
_EXTRA_FIELDS = {
    "Pod": {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "status.phase", "status.podIP"},
    "Namespace": {"status.phase"},
    "Secret": {"type"},
    "Event": {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
              "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "source", "type"},
    "ReplicaSet": {"status.replicas"},
    "Job": {"status.successful"},
}


def parse_field_selector(text, kind):
    """Parse a field selector into (path, op, value) triples; 400 for unsupported fields like the real server."""
    reqs = []
    if not text:
        return reqs
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.match(r"^([^=!]+)(==|!=|=)(.*)$", part)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        path, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        if path not in ("metadata.name", "metadata.namespace") and path not in _EXTRA_FIELDS.get(kind, ()):
            raise bad_request(f'field label not supported: {path}')
        reqs.append((path, "!=" if op == "!=" else "=", value))
    return reqs


def _field_value(obj, path):
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    return str(cur).lower() if isinstance(cur, bool) else str(cur)


def field_match(obj, reqs):
    """True if the object satisfies every field requirement."""
    for path, op, value in reqs:
        actual = _field_value(obj, path)
        if (actual == value) != (op == "="):
            return False
    return True
