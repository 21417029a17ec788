# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters and tests a sandboxed template may use (see :mod:`sandbox`): an allow-list.

Jinja2's own filters and tests (pure functions of their arguments) but ``random``, plus the pure,
deterministic ones of Ansible's that manifests use, written here so that they behave the same on
every ansible-core version and cannot reach what Ansible's can (``from_yaml`` there builds vault
values that decrypt with the job's secrets; ``to_yaml`` its own dumper). Nothing here reads a file,
the environment, the clock, the network or a random source, or runs a command. Names are accepted
bare and as ``ansible.builtin.<name>``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import itertools
import json
import math
import posixpath
import re
import shlex
import uuid
from collections.abc import Mapping
from urllib.parse import unquote_plus, urlsplit

import yaml
from jinja2.defaults import DEFAULT_FILTERS, DEFAULT_TESTS
from jinja2.runtime import Undefined

UUID_NAMESPACE_ANSIBLE = uuid.UUID("361E6D51-FAEC-444A-9079-341386DA8E2E")


class FilterError(ValueError):
    """A filter refused its arguments (named in the template error)."""


# -- serialisation -------------------------------------------------------------------------------

class _Dumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
    """SafeDumper that writes ``str`` subclasses (Jinja's Markup) as strings."""


_Dumper.add_multi_representer(str, yaml.representer.SafeRepresenter.represent_str)
_YAML_OPTIONS = ("indent", "width", "sort_keys", "explicit_start", "explicit_end", "default_flow_style",
                 "default_style", "canonical", "allow_unicode")
_JSON_OPTIONS = ("indent", "sort_keys", "separators", "ensure_ascii")


def _options(kwargs, allowed, what):
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise FilterError("%s does not take %s here" % (what, ", ".join(unknown)))
    return kwargs


def to_yaml(value, *_args, **kwargs):
    kwargs = dict(_options(kwargs, _YAML_OPTIONS, "to_yaml"))
    kwargs.setdefault("allow_unicode", True)
    kwargs.setdefault("default_flow_style", None)
    return yaml.dump(value, Dumper=_Dumper, **kwargs)


def to_nice_yaml(value, indent=4, *_args, **kwargs):
    kwargs = dict(_options(kwargs, _YAML_OPTIONS, "to_nice_yaml"))
    kwargs.setdefault("default_flow_style", False)
    return to_yaml(value, indent=indent, **kwargs)


def to_json(value, *_args, **kwargs):
    return json.dumps(value, **_options(kwargs, _JSON_OPTIONS, "to_json"))


def to_nice_json(value, indent=4, sort_keys=True, *_args, **kwargs):
    kwargs = dict(_options(kwargs, _JSON_OPTIONS, "to_nice_json"))
    kwargs.pop("separators", None)
    return json.dumps(value, indent=indent, sort_keys=sort_keys, separators=(",", ": "), **kwargs)


def from_json(value):
    return json.loads(value)


def b64encode(value, encoding="utf-8", urlsafe=False):
    data = str(value).encode(encoding, "surrogateescape")
    return (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode("ascii")


def b64decode(value, encoding="utf-8", urlsafe=False):
    data = str(value).encode("ascii", "surrogateescape")
    return (base64.urlsafe_b64decode if urlsafe else base64.b64decode)(data).decode(encoding, "surrogateescape")


# -- strings and regular expressions ------------------------------------------------------------

def _flags(ignorecase, multiline):
    return (re.I if ignorecase else 0) | (re.M if multiline else 0)


def regex_replace(value="", pattern="", replacement="", ignorecase=False, multiline=False, count=0, mandatory_count=0):
    output, subs = re.compile(pattern, _flags(ignorecase, multiline)).subn(replacement, str(value), count=count)
    if mandatory_count and mandatory_count != subs:
        raise FilterError("'%s' should match %d times, but matches %d times" % (pattern, mandatory_count, subs))
    return output


def regex_findall(value, regex, multiline=False, ignorecase=False):
    return re.findall(regex, str(value), _flags(ignorecase, multiline))


def regex_search(value, regex, *args, **kwargs):
    groups = []
    for arg in args:
        named = re.match(r"\\g<(\S+)>$", arg)
        number = re.match(r"\\(\d+)$", arg)
        if not (named or number):
            raise FilterError("regex_search: unknown argument %r" % (arg,))
        groups.append(named.group(1) if named else int(number.group(1)))
    match = re.search(regex, str(value), _flags(kwargs.get("ignorecase"), kwargs.get("multiline")))
    if match:
        return [match.group(g) for g in groups] if groups else match.group()
    return None


def regex_escape(value, re_type="python"):
    if re_type == "python":
        return re.escape(str(value))
    if re_type == "posix_basic":
        return regex_replace(str(value), r"([].[^$*\\])", r"\\\1")
    raise FilterError("regex_escape: regex type %r is not supported" % (re_type,))


def to_bool(value):
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, str):
        value = value.lower()
    return value in ("yes", "on", "1", "true", 1)


def ternary(value, true_val, false_val, none_val=None):
    if value is None and none_val is not None:
        return none_val
    return true_val if value else false_val


def mandatory(value, msg=None):
    if isinstance(value, Undefined):
        raise FilterError(msg or "mandatory variable %s not defined" % (
            ("'%s'" % value._undefined_name) if getattr(value, "_undefined_name", None) else "value"))
    return value


def split(value, separator=None, maxsplit=-1):
    return str(value).split(separator, maxsplit)


def quote(value):
    return shlex.quote("" if value is None else str(value))


def type_debug(value):
    return type(value).__name__


# -- hashes and identifiers ----------------------------------------------------------------------

def get_hash(value, hashtype="sha1"):
    if hashtype not in hashlib.algorithms_guaranteed:
        raise FilterError("hash: unknown hash type %r" % (hashtype,))
    return hashlib.new(hashtype, str(value).encode("utf-8", "surrogateescape")).hexdigest()


def to_uuid(value, namespace=UUID_NAMESPACE_ANSIBLE):
    if not isinstance(namespace, uuid.UUID):
        namespace = uuid.UUID(str(namespace))
    return str(uuid.uuid5(namespace, str(value)))


# -- collections ----------------------------------------------------------------------------------

def _merge(left, right, recursive, list_merge):
    out = dict(left)
    for key, value in right.items():
        old = out.get(key)
        if recursive and isinstance(old, Mapping) and isinstance(value, Mapping):
            out[key] = _merge(old, value, recursive, list_merge)
        elif isinstance(old, list) and isinstance(value, list) and list_merge != "replace":
            out[key] = _merge_lists(old, value, list_merge)
        else:
            out[key] = value
    return out


def _merge_lists(old, new, how):
    if how == "keep":
        return old
    if how == "append":
        return old + new
    if how == "prepend":
        return new + old
    if how == "append_rp":
        return [x for x in old if x not in new] + new
    if how == "prepend_rp":
        return new + [x for x in old if x not in new]
    raise FilterError("combine: list_merge must be replace, keep, append, prepend, append_rp or prepend_rp")


def combine(*terms, **kwargs):
    recursive = kwargs.pop("recursive", False)
    list_merge = kwargs.pop("list_merge", "replace")
    if kwargs:
        raise FilterError("combine: recursive and list_merge are the only options")
    dicts = []
    for term in terms:
        dicts.extend(term if isinstance(term, list) else [term])
    result = {}
    for item in dicts:
        if not isinstance(item, Mapping):
            raise FilterError("combine: expects dictionaries, got %s" % type(item).__name__)
        result = _merge(result, item, recursive, list_merge)
    return result


def dict2items(value, key_name="key", value_name="value"):
    if not isinstance(value, Mapping):
        raise FilterError("dict2items requires a dictionary, got %s" % type(value).__name__)
    return [{key_name: k, value_name: v} for k, v in value.items()]


def items2dict(value, key_name="key", value_name="value"):
    try:
        return dict((item[key_name], item[value_name]) for item in value)
    except (KeyError, TypeError) as exc:
        raise FilterError("items2dict requires a list of dictionaries with %r and %r (%s)" % (key_name, value_name, exc)) from None


def flatten(value, levels=None, skip_nulls=True):
    out = []
    for element in value:
        if skip_nulls and element in (None, "None", "null"):
            continue
        if isinstance(element, (list, tuple)) and (levels is None or levels >= 1):
            out.extend(flatten(element, None if levels is None else int(levels) - 1, skip_nulls))
        else:
            out.append(element)
    return out


def _unique(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def union(a, b):
    return _unique(list(a) + list(b))


def intersect(a, b):
    return _unique([x for x in a if x in b])


def difference(a, b):
    return _unique([x for x in a if x not in b])


def symmetric_difference(a, b):
    common = intersect(a, b)
    return [x for x in union(a, b) if x not in common]


def zip_filter(*args):
    return [list(t) for t in zip(*args)]


def zip_longest(*args, **kwargs):
    return [list(t) for t in itertools.zip_longest(*args, fillvalue=kwargs.get("fillvalue"))]


def logarithm(x, base=math.e):
    return math.log10(x) if base == 10 else math.log(x, base)


def inversepower(x, base=2):
    return math.sqrt(x) if base == 2 else math.pow(x, 1.0 / float(base))


# -- paths and URLs (text operations only: nothing is looked up on the controller) --------------

def path_join(paths):
    if isinstance(paths, str):
        return paths
    return posixpath.join(*[str(p) for p in paths])


def split_url(value, query=""):
    parts = urlsplit(str(value))
    fields = dict((name, getattr(parts, name)) for name in ("scheme", "netloc", "path", "query", "fragment",
                                                            "username", "password", "hostname", "port"))
    if query:
        if query not in fields:
            raise FilterError("urlsplit: unknown URL component %r" % (query,))
        return fields[query]
    return fields


#: Ansible's pure filters, bare names (each also as ansible.builtin.<name>)
ANSIBLE_FILTERS = {
    "to_yaml": to_yaml, "to_nice_yaml": to_nice_yaml, "to_json": to_json, "to_nice_json": to_nice_json,
    "from_json": from_json, "b64encode": b64encode, "b64decode": b64decode,
    "regex_replace": regex_replace, "regex_findall": regex_findall, "regex_search": regex_search,
    "regex_escape": regex_escape, "bool": to_bool, "ternary": ternary, "mandatory": mandatory, "split": split,
    "quote": quote, "type_debug": type_debug, "hash": get_hash, "md5": lambda v: get_hash(v, "md5"),
    "sha1": lambda v: get_hash(v, "sha1"), "checksum": lambda v: get_hash(v, "sha1"), "to_uuid": to_uuid,
    "combine": combine, "dict2items": dict2items, "items2dict": items2dict, "flatten": flatten, "union": union,
    "intersect": intersect, "difference": difference, "symmetric_difference": symmetric_difference,
    "zip": zip_filter, "zip_longest": zip_longest, "log": logarithm, "root": inversepower,
    "basename": posixpath.basename, "dirname": posixpath.dirname, "splitext": lambda p: list(posixpath.splitext(p)),
    "normpath": posixpath.normpath, "path_join": path_join, "urlsplit": split_url, "urldecode": unquote_plus,
}
#: Jinja2's filters left out: ``random`` (a sync renders the same commit to the same objects every run)
JINJA_FILTERS_LEFT_OUT = ("random",)


def _version_test(value, version, operator="eq", strict=None, version_type=None):
    # ansible-core's own `version` test: pure (comparisons of version strings), on every supported version
    from ansible.plugins.test.core import version_compare  # pylint: disable=import-outside-toplevel
    return version_compare(value, version, operator, strict, version_type)


def _regex_test(value="", pattern="", ignorecase=False, multiline=False, match_type="search"):
    flags = _flags(ignorecase, multiline)
    method = {"match": re.match, "search": re.search, "fullmatch": re.fullmatch}.get(match_type)
    if method is None:
        raise FilterError("regex: match_type must be match, search or fullmatch")
    return method(pattern, str(value), flags) is not None


def _truthy(value, convert_bool=False):
    return bool(to_bool(value) if convert_bool else value)


ANSIBLE_TESTS = {
    "match": lambda v, p="", ignorecase=False, multiline=False: _regex_test(v, p, ignorecase, multiline, "match"),
    "search": lambda v, p="", ignorecase=False, multiline=False: _regex_test(v, p, ignorecase, multiline, "search"),
    "regex": _regex_test, "version": _version_test, "version_compare": _version_test,
    "subset": lambda a, b: set(a) <= set(b), "superset": lambda a, b: set(a) >= set(b),
    "contains": lambda seq, value: value in seq, "any": any, "all": all,
    "truthy": _truthy, "falsy": lambda v, convert_bool=False: not _truthy(v, convert_bool),
}


def defined_arguments(function):
    """``function`` failing as Jinja2 does (``'x' is undefined``) when given an undefined value."""
    def checked(*args, **kwargs):
        for arg in list(args) + list(kwargs.values()):
            if isinstance(arg, Undefined):
                arg._fail_with_undefined_error()  # pylint: disable=protected-access
        return function(*args, **kwargs)

    checked.wrapped = function
    return checked


#: Ansible's filters, as a sandboxed template calls them (an undefined argument fails; mandatory says so itself)
_CHECKED_FILTERS = dict((k, v if k == "mandatory" else defined_arguments(v)) for k, v in ANSIBLE_FILTERS.items())


def allowed_filters():
    """``name -> function`` of every filter a sandboxed template may use."""
    filters = dict((k, v) for k, v in DEFAULT_FILTERS.items() if k not in JINJA_FILTERS_LEFT_OUT)
    filters.update(_CHECKED_FILTERS)
    filters.update(("ansible.builtin." + k, v) for k, v in list(filters.items()))
    return filters


def allowed_tests():
    """``name -> function`` of every test a sandboxed template may use."""
    tests = dict(DEFAULT_TESTS)
    tests.update(ANSIBLE_TESTS)
    tests.update(("ansible.builtin." + k, v) for k, v in list(tests.items()))
    return tests
