"""What the real server's decoding into Go types does to a built-in object's values.

- ``resource.Quantity`` values come back in the form ``Quantity.String()`` gives (``2000m`` -> ``"2"``,
  ``0.5`` -> ``"500m"``, ``1024Mi`` -> ``"1Gi"``), except that a string already in canonical-enough form
  is kept as written (``3.333``, ``+1``, ``1e3`` on create; apimachinery's ``ParseQuantity`` "reuse the
  string" rule); ``ResourceList`` values (container resources, PVC requests, quota) are also rounded up
  to milli-units (``SetDefaults_ResourceList``).
- ``null`` values are dropped (a field a server-side apply sets to null is removed, then defaulted).
- Zero values of ``omitempty`` fields that are not pointers are dropped (``minReadySeconds: 0``,
  ``readOnly: false``, ``value: ""``, ``args: []``, ``labels: {}``); pointer fields keep them
  (``replicas: 0``, ``runAsUser: 0``, ``optional: false``, ``hostPath.type: ""``).

Built from the apimachinery sources' rules and checked value by value against kube-apiserver v1.36
(``tests/unit/test_kubesim_normalise.py``).
"""

import re
from fractions import Fraction

_QUANTITY = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?([a-zA-Z]*[-+]?[0-9]*)$")
_DECIMAL_SUFFIX = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_NAME = {v: k for k, v in _DECIMAL_SUFFIX.items()}
_BINARY_NAME = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_NANO = Fraction(1, 10**9)
_MILLI = Fraction(1, 1000)


class QuantityError(ValueError):
    """Not a quantity (the real server answers 400 BadRequest)."""


def parse_quantity(text):
    """``(value, format, kept)``: the exact value (a Fraction, rounded up to nano-units), the format
    (``DecimalSI``, ``BinarySI``, ``DecimalExponent``) and the scale if the string is kept as written
    (else None), as apimachinery's ``ParseQuantity``."""
    text = str(text).strip()
    m = _QUANTITY.match(text)
    if not m or not (m.group(2) or m.group(3)):
        raise QuantityError("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    sign, num, denom, suffix = m.group(1), m.group(2).lstrip("0") or "0", m.group(3) or "", m.group(4)
    if suffix in _DECIMAL_SUFFIX:
        base, exponent, fmt = 10, _DECIMAL_SUFFIX[suffix], "DecimalSI"
    elif suffix in _BINARY_SUFFIX:
        base, exponent, fmt = 2, _BINARY_SUFFIX[suffix], "BinarySI"
    elif len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[-+]?[0-9]+", suffix[1:]):
        base, exponent, fmt = 10, int(suffix[1:]), "DecimalExponent"
    else:
        raise QuantityError("unable to parse quantity's suffix")
    digits = int(num + denom)
    negative = sign == "-"
    value = Fraction(digits, 10 ** len(denom)) * Fraction(base) ** exponent
    kept = None
    if base == 10:
        precision = 18 - (len(num) + len(denom))
        scale = exponent - len(denom)
        if precision >= 0 and scale >= -9 and digits < 2**63:
            shifted = num + denom
            if scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                kept = scale
    elif exponent >= 0 and not denom:
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        if precision >= 0 and exponent % 10 == 0 and digits & 7 != 0:
            kept = 0
    if value % _NANO:
        value = _ceil_to(value, _NANO)
    return (-value if negative else value), fmt, kept


def _ceil_to(value, step):
    """``value`` rounded away from zero to a multiple of ``step`` (inf.RoundUp)."""
    units = value / step
    whole = units.numerator // units.denominator
    if whole != units:
        whole += 1 if value > 0 else 0
    return whole * step


def format_quantity(value, fmt):
    """``Quantity.String()`` of a value in a format (CanonicalizeBytes)."""
    if value == 0:
        return "0"
    if fmt == "BinarySI":
        if -1024 < value < 1024 or value.denominator != 1:
            fmt = "DecimalSI"
        else:
            n, e = int(value), 0
            while n % 1024 == 0 and e < len(_BINARY_NAME) - 1:
                n //= 1024
                e += 1
            return f"{n}{_BINARY_NAME[e]}"
    mantissa, exponent = value * 10**9, -9
    mantissa = mantissa.numerator  # values are multiples of nano-units
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    mantissa *= 10**shift
    exponent -= shift
    if fmt == "DecimalSI" and exponent in _DECIMAL_NAME:
        return f"{mantissa}{_DECIMAL_NAME[exponent]}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


def canonical_quantity(value, resource_list=False, apply=False):
    """The value a quantity field holds after the real server decoded it.

    ``resource_list``: a ``ResourceList`` value (rounded up to milli-units); ``apply``: the object came
    through server-side apply, whose conversion does not keep ``DecimalExponent`` strings (``1e3`` -> ``1k``).
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError("quantities must be strings or numbers")
    text = value if isinstance(value, str) else repr(value)
    parsed, fmt, kept = parse_quantity(text)
    if apply and fmt == "DecimalExponent":
        fmt, kept = "DecimalSI", None
    if resource_list and kept is not None and kept < -3:
        kept = None
    if resource_list and parsed % _MILLI:
        parsed, kept = _ceil_to(parsed, _MILLI), None
    if kept is not None:
        return text.strip()
    return format_quantity(parsed, fmt)


# ---------------------------------------------------------------- omitempty
# Non-pointer omitempty fields: their zero value is dropped. Keyed by field name; a name listed for a
# type applies to values of that type only (``value: ""`` of an EnvVar; an HPA policy's ``value: 0`` stays).
_DROP_EMPTY_STRING = frozenset((
    "value", "subPath", "subPathExpr", "workingDir", "hostIP", "clusterIP", "loadBalancerIP", "externalName", "hostname", "subdomain",
    "nodeName", "priorityClassName", "runtimeClassName", "serviceAccountName", "serviceAccount", "schedulerName", "dnsPolicy",
    "restartPolicy", "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy", "image", "generateName", "serviceName",
    "sessionAffinity", "externalTrafficPolicy", "type", "protocol", "pathType", "path", "host", "secretName", "medium", "fsType",
    "namespace", "apiGroup", "message", "reason", "description", "podManagementPolicy", "concurrencyPolicy", "completionMode",
))
_DROP_ZERO_INT = frozenset((
    "minReadySeconds", "initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold", "hostPort",
    "nodePort", "healthCheckNodePort", "observedGeneration",
))
_DROP_FALSE = frozenset((
    "readOnly", "hostNetwork", "hostPID", "hostIPC", "stdin", "stdinOnce", "tty", "paused", "publishNotReadyAddresses",
    "preserveUnknownFields", "deprecated", "nullable", "uniqueItems", "insecureSkipTLSVerify", "x-kubernetes-int-or-string",
))
_DROP_EMPTY_LIST = frozenset((
    "args", "command", "env", "envFrom", "ports", "volumeMounts", "volumeDevices", "volumes", "tolerations", "imagePullSecrets",
    "initContainers", "ephemeralContainers", "finalizers", "ownerReferences", "subjects", "apiGroups", "resourceNames",
    "nonResourceURLs", "hostAliases", "items", "externalIPs", "loadBalancerSourceRanges", "add", "drop", "secrets", "tls", "hosts",
    "paths", "ingress", "egress", "from", "to", "values", "matchExpressions", "topologySpreadConstraints", "readinessGates",
    "accessModes", "mountOptions", "metrics", "policies", "gates", "schedulingGates", "resourceClaims", "sources", "categories",
    "shortNames", "additionalPrinterColumns", "conditions", "required", "enum", "allOf", "anyOf", "oneOf",
))
_DROP_EMPTY_MAP = frozenset((
    "labels", "annotations", "data", "binaryData", "stringData", "matchLabels", "nodeSelector", "limits", "requests", "hard",
    "capacity", "parameters", "properties", "definitions",
))
# Maps keyed by user data (never field names): their entries are values, not fields.
_USER_MAPS = frozenset(("labels", "annotations", "data", "binaryData", "stringData", "matchLabels", "nodeSelector", "parameters",
                        "limits", "requests", "hard", "capacity", "properties", "definitions", "patternProperties", "dependencies"))
# ``selector`` is a map (Service) or a struct (workloads): dropped only when it is an empty map of a Service.
_RESOURCE_LIST_PARENTS = frozenset(("resources", "overhead"))
_RESOURCE_LISTS = frozenset(("limits", "requests"))
_LIMIT_RANGE_LISTS = frozenset(("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"))
_QUANTITY_FIELDS = frozenset(("sizeLimit", "divisor"))
_QUANTITY_TARGET_FIELDS = frozenset(("value", "averageValue"))


def _is_zero(name, value):
    if value is None:  # a Go type holds no null: decoding drops it (server-side apply may set a field to null)
        return True
    if value == "" and isinstance(value, str):
        return name in _DROP_EMPTY_STRING
    if value is False:
        return name in _DROP_FALSE
    if type(value) is int and value == 0:
        return name in _DROP_ZERO_INT
    if isinstance(value, list) and not value:
        return name in _DROP_EMPTY_LIST
    if isinstance(value, dict) and not value:
        return name in _DROP_EMPTY_MAP
    return False


def _quantities(node, parent, apply, kind):
    """Canonicalise the quantities of one map (in place)."""
    for name, value in node.items():
        if isinstance(value, dict) and ((name in _RESOURCE_LISTS and parent in _RESOURCE_LIST_PARENTS)
                                        or (name == "hard" and kind == "ResourceQuota") or (name == "capacity" and kind == "PersistentVolume")
                                        or (name in _LIMIT_RANGE_LISTS and kind == "LimitRange") or name == "overhead"):
            for k, v in value.items():
                value[k] = canonical_quantity(v, resource_list=True, apply=apply)
        elif (name in _QUANTITY_FIELDS or (name in _QUANTITY_TARGET_FIELDS and parent == "target")) and isinstance(value, (str, int, float)):
            node[name] = canonical_quantity(value, apply=apply)


def _walk(node, parent, apply, kind):
    if isinstance(node, list):
        for item in node:
            _walk(item, parent, apply, kind)
        return
    if not isinstance(node, dict):
        return
    _quantities(node, parent, apply, kind)
    for name in [k for k, v in node.items() if _is_zero(k, v) or (k == "selector" and v == {} and kind == "Service")]:
        del node[name]
    for name, value in node.items():
        if name not in _USER_MAPS and isinstance(value, (dict, list)):
            _walk(value, name, apply, kind)


def normalise(obj, apply=False):
    """Normalise a built-in object in place (quantities, omitted zero values), like decoding it into its
    Go type and encoding it again. ``metadata`` keeps only its own omitempty rules (labels/annotations)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in ("labels", "annotations", "finalizers", "ownerReferences", "generateName"):
            if key in meta and _is_zero(key, meta[key]):
                del meta[key]
    kind = obj.get("kind")
    for key in [k for k in obj if k not in ("metadata", "apiVersion", "kind")]:
        value = obj[key]
        if _is_zero(key, value):
            del obj[key]
        elif isinstance(value, (dict, list)) and key not in _USER_MAPS:
            _walk(value, key, apply, kind)
    return obj
