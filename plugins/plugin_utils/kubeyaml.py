# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read manifest files the way ``kubectl apply -f`` / ``kubectl create -f`` read them.

kubectl reads a file as a JSON stream when its first non-blank character is ``{``, else as YAML
documents split on lines starting with ``---``, each converted to JSON by sigs.k8s.io/yaml over
go-yaml v2. The objects it sends are that JSON, decoded again (integers that fit in int64 stay
integers, every other number becomes a float64). This module reproduces that with PyYAML:

* plain scalars are resolved as go-yaml v2 resolves them: YAML 1.1 booleans (``yes``, ``on``,
  ``y``, ...), ``0x``/``0o``/``0b``/leading-zero octal integers, ``_`` separators, no sexagesimal
  numbers (``1:20`` is a string), timestamps kept as the written string, ``=`` a string;
* numbers as they come out of kubectl's JSON round trip: ``1.0`` and ``1e3`` are integers,
  integers outside int64 are floats, ``.nan`` / ``.inf`` are errors;
* mapping keys converted to strings as sigs.k8s.io/yaml converts them (``y:`` is ``"true"``,
  ``1.5:`` is ``"1.5"``, a null or list key is an error);
* merge keys (``<<``) applied in document order, ``!!binary`` decoded, unknown tags ignored.

Deliberately stricter than kubectl (each would silently drop data that a pruning sync then
deletes from the cluster): a key written twice in one mapping (kubectl keeps the last) and
content after a ``...`` document end marker (kubectl ignores it) are errors.

Speed: libyaml parses and composes the nodes; a document without anchors made only of mappings,
sequences and plain or quoted scalars (nearly every manifest) is then built in one walk by
:func:`construct_tree`, which gives what :class:`KubectlConstructor` gives (unit-tested against it),
and leaves everything else (merge keys, tags, ``!vault``, errors) to it.

Pure functions and a PyYAML loader class; no Ansible imports, so it is unit-tested directly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import calendar
import decimal
import json
import math
import re
import struct

import yaml

INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1
UINT64_MAX = 2 ** 64 - 1

TAG_PREFIX = "tag:yaml.org,2002:"
STR_TAG = TAG_PREFIX + "str"
MERGE_TAG = TAG_PREFIX + "merge"
BINARY_TAG = TAG_PREFIX + "binary"
#: Tag the resolver gives plain (unquoted, untagged) scalars: resolved by :func:`resolve_plain`.
PLAIN_TAG = "tag:stacksync.io,2026:plain"
#: Explicit tags go-yaml v2 checks a scalar against; every other tag is ignored.
RESOLVABLE_TAGS = frozenset(TAG_PREFIX + t for t in ("str", "bool", "null", "int", "float", "timestamp"))


#: the deepest nesting of flow collections (``[`` and ``{``) a document may have: PyYAML's C extension composes nodes
#: recursively, and some 20,000 levels overflow the C stack (the process dies: no exception to catch)
MAX_FLOW_DEPTH = 1000
_BRACKETS = re.compile(r"[\[\]{}]")


def too_deep(text, limit=MAX_FLOW_DEPTH):
    """True if the flow collections of ``text`` may nest deeper than ``limit`` (brackets counted without regard to
    quoting: an over-estimate). Block collections nest by indentation: ``max_file_size`` bounds them far lower."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        elif depth:
            depth -= 1
    return False


class KubeYAMLError(yaml.MarkedYAMLError):
    """A document kubectl would refuse too (or that we refuse on purpose), with its position."""


class Uint64(int):
    """An integer go-yaml v2 holds as uint64 (2**63 .. 2**64-1): a value, but never a mapping key."""

    __slots__ = ()


# --------------------------------------------------------------------------------------------
# Scalars (go-yaml v2 resolve.go)
# --------------------------------------------------------------------------------------------

_BOOLS = {s: True for s in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")}
_BOOLS.update({s: False for s in ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")})
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_SPECIAL_FLOATS = {".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan}
for _sign, _value in (("", math.inf), ("+", math.inf), ("-", -math.inf)):
    _SPECIAL_FLOATS.update({_sign + s: _value for s in (".inf", ".Inf", ".INF")})

#: go-yaml's yamlStyleFloat: what strconv.ParseFloat may then read (no hex, no "inf").
_YAML_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
#: A scalar starting with "." that strconv.ParseFloat reads (".5", ".5e3").
_DOT_FLOAT = re.compile(r"^\.[0-9]+(?:[eE][-+]?[0-9]+)?$")
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}

#: go-yaml v2's timestamp layouts, as regular expressions (time.Parse: 1-2 digit fields).
_TIMESTAMPS = (
    re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$"),
    re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.\d+)?$"),
    re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$"),
)


def go_parse_uint(text):
    """strconv.ParseUint(text, 0, 64): base prefixes ``0x``/``0o``/``0b``/``0``; ``None`` if invalid."""
    base, digits = 10, text
    lower = text[:2].lower()
    if lower in ("0x", "0o", "0b"):
        base, digits = {"0x": 16, "0o": 8, "0b": 2}[lower], text[2:]
    elif len(text) > 1 and text[0] == "0":
        base, digits = 8, text[1:]
    if not digits or any(c not in _DIGITS[base] for c in digits):
        return None
    value = int(digits, base)
    return value if value <= UINT64_MAX else None


def go_parse_int(text):
    """strconv.ParseInt(text, 0, 64): an optional sign, then :func:`go_parse_uint`; ``None`` if invalid."""
    sign = 1
    if text[:1] in ("+", "-"):
        sign, text = (-1 if text[0] == "-" else 1), text[1:]
    magnitude = go_parse_uint(text)
    if magnitude is None:
        return None
    value = sign * magnitude
    return value if INT64_MIN <= value <= INT64_MAX else None


def is_timestamp(text):
    """True if go-yaml v2 reads ``text`` as a timestamp (one of its layouts, a valid date and time)."""
    for layout in _TIMESTAMPS:
        match = layout.match(text)
        if match is None:
            continue
        fields = [int(f) for f in match.groups()]
        year, month, day = fields[:3]
        if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
            return False
        if len(fields) > 3:
            hour, minute, second = fields[3:]
            return hour < 24 and minute < 60 and second < 60
        return True
    return False


def _parse_float(text):
    value = float(text)
    return None if math.isinf(value) else value  # strconv.ParseFloat: out of range is an error


def resolve_plain(text):
    """``(tag, value)`` of a plain scalar as go-yaml v2 resolves it (tag short name: ``str``, ``int``...).

    Timestamps resolve to ``('timestamp', text)``: kubectl keeps the written string.
    """
    if text in _NULLS:
        return "null", None
    if text in _BOOLS:
        return "bool", _BOOLS[text]
    if text in _SPECIAL_FLOATS:
        return "float", _SPECIAL_FLOATS[text]
    first = text[0]
    if first == ".":
        if _DOT_FLOAT.match(text):
            return "float", _parse_float(text)
    elif first in "+-0123456789":
        if is_timestamp(text):
            return "timestamp", text
        plain = text.replace("_", "")
        value = go_parse_int(plain)
        if value is not None:
            return "int", value
        value = go_parse_uint(plain)
        if value is not None:
            return "int", Uint64(value)
        if _YAML_FLOAT.match(plain):
            value = _parse_float(plain)
            if value is not None:
                return "float", value
    return "str", text


def resolve_tagged(tag, text):
    """The value of a scalar with an explicit core tag (``!!int "12"``), or raise ``ValueError``."""
    short = tag[len(TAG_PREFIX):]
    if short == "str":
        return text
    rtag, value = resolve_plain(text)
    if rtag == short:
        return value
    if short == "float" and rtag == "int" and not isinstance(value, Uint64):
        return float(value)
    raise ValueError("cannot decode !!%s `%s` as a !!%s" % (rtag, text, short))


def decode_binary(text):
    """``!!binary``: base64 (line breaks ignored) decoded, bytes that are not UTF-8 replaced by U+FFFD each."""
    try:
        data = base64.b64decode(text.replace("\n", "").replace("\r", ""), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("!!binary value contains invalid base64 data") from None
    return data.decode("utf-8", "surrogateescape").translate(_ESCAPED_BYTES)


#: surrogateescape maps each undecodable byte to U+DC80..U+DCFF; Go's JSON encoder writes U+FFFD for each.
_ESCAPED_BYTES = {c: 0xFFFD for c in range(0xDC80, 0xDD00)}
_SURROGATE = re.compile("[\ud800-\udfff]")


# --------------------------------------------------------------------------------------------
# JSON round trip (sigs.k8s.io/yaml, encoding/json, unstructured decoding)
# --------------------------------------------------------------------------------------------

def json_number(value):
    """A number as kubectl sends it: integers that fit int64 stay (or become) integers, others floats.

    Raises ``ValueError`` for NaN and infinities (``json: unsupported value``).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return int(value)
        value = float(value)  # go-yaml reads it as float64 (or uint64, a float64 after the JSON round trip)
    if math.isnan(value) or math.isinf(value):
        raise ValueError("%s is not a number JSON can carry (kubectl: json: unsupported value)"
                         % ("NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"))
    if value.is_integer() and abs(value) < 1e21:
        # encoding/json writes it with its shortest digits and no exponent; read back as int64 if it fits
        as_int = int(decimal.Decimal(repr(value)))
        if INT64_MIN <= as_int <= INT64_MAX:
            return as_int
    return value


def format_float_key(value):
    """strconv.FormatFloat(value, 'g', -1, 32), as sigs.k8s.io/yaml writes a float mapping key."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for precision in range(1, 10):  # the shortest decimal that reads back as the same float32
        text = "%.*e" % (precision - 1, single)
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent = text.split("e")
    exponent = int(exponent)
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    sign = "-" if single < 0 else ""
    if exponent < -4 or exponent >= 6:  # Go's %e/%f choice for the shortest form
        fraction = "." + digits[1:] if len(digits) > 1 else ""
        return "%s%s%se%s%02d" % (sign, digits[0], fraction, "-" if exponent < 0 else "+", abs(exponent))
    if exponent >= 0:
        whole, fraction = digits[:exponent + 1].ljust(exponent + 1, "0"), digits[exponent + 1:]
    else:
        whole, fraction = "0", "0" * (-exponent - 1) + digits
    return sign + whole + ("." + fraction if fraction else "")


def mapping_key(key):
    """The JSON object key sigs.k8s.io/yaml makes of a YAML key, or raise ``ValueError``."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, Uint64):
        raise ValueError("unsupported map key of type uint64: %d" % key)
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return format_float_key(key)
    if key is None:
        raise ValueError("unsupported map key: null (quote it)")
    raise ValueError("invalid map key: a %s" % ("mapping" if isinstance(key, dict) else "list"))


# --------------------------------------------------------------------------------------------
# The common case, constructed in one walk (what every manifest file but a few holds)
# --------------------------------------------------------------------------------------------

class NotATree(Exception):
    """The document holds something :func:`construct_tree` leaves to :class:`KubectlConstructor`."""


#: Plain scalars :func:`resolve_plain` may read as something else than the string itself: the nulls,
#: booleans and special floats, and whatever starts like a number (numbers, timestamps).
_NOT_STRINGS = frozenset(_NULLS) | frozenset(_BOOLS) | frozenset(_SPECIAL_FLOATS)
_NUMBER_STARTS = frozenset("+-.0123456789")
#: Deepest nesting :func:`construct_tree` takes on; deeper documents go the general way (and its errors).
TREE_MAX_DEPTH = 64


def _tree_scalar(node, key):
    """A scalar's value (``key``: as a mapping key); ``NotATree`` for tags, merge keys and errors."""
    text = node.value
    tag = node.tag
    if tag == PLAIN_TAG:
        if text not in _NOT_STRINGS and text[:1] not in _NUMBER_STARTS:
            return text
        value = resolve_plain(text)[1]
        try:
            return mapping_key(value) if key else json_number(value) if isinstance(value, (int, float)) else value
        except ValueError:
            raise NotATree() from None
    if tag == STR_TAG and not (node.style == '"' and _SURROGATE.search(text)):
        return text
    raise NotATree()


def construct_tree(node, max_values=None):
    """The value of a document's node, as :class:`KubectlConstructor` constructs it, in one walk.

    Only for a tree (no node reached twice: a text without anchors) of mappings, sequences and plain,
    quoted or ``!!str`` scalars, nested at most :data:`TREE_MAX_DEPTH` deep, holding at most
    ``max_values`` values (the document itself, each mapping value and each sequence item; ``None``: no
    limit). Anything else (merge keys, other tags, ``!vault``, a key written twice, a key or number
    kubectl refuses, a top-level scalar) raises :class:`NotATree`, and the general constructor reads the
    document, with its errors.
    """
    budget = [max_values - 1 if max_values is not None else None]
    if budget[0] is not None and budget[0] < 0:
        raise NotATree()
    return _tree_collection(node, 0, budget)


def _tree_collection(node, depth, budget):
    if depth > TREE_MAX_DEPTH:
        raise NotATree()
    depth += 1
    kind = node.__class__
    if kind is not yaml.MappingNode and kind is not yaml.SequenceNode:
        raise NotATree()
    if budget[0] is not None:
        budget[0] -= len(node.value)
        if budget[0] < 0:
            raise NotATree()
    if kind is yaml.SequenceNode:
        return [_tree_scalar(child, False) if child.__class__ is yaml.ScalarNode
                else _tree_collection(child, depth, budget) for child in node.value]
    data = {}
    for key_node, value_node in node.value:
        if key_node.__class__ is not yaml.ScalarNode:
            raise NotATree()
        key = _tree_scalar(key_node, True)
        if key in data:
            raise NotATree()
        data[key] = (_tree_scalar(value_node, False) if value_node.__class__ is yaml.ScalarNode
                     else _tree_collection(value_node, depth, budget))
    return data


# --------------------------------------------------------------------------------------------
# What a document expands to (anchors and aliases), measured on its nodes before it is built
# --------------------------------------------------------------------------------------------

class ExpansionError(ValueError):
    """A document whose anchors and aliases expand past a limit, or into themselves.

    ``limit``: ``"values"``, ``"bytes"`` or ``"recursive"``; ``node``: the node whose expansion crossed the
    limit; ``repeated``: ``(size, node)`` of the largest part that aliases repeat (``None`` if none)."""

    def __init__(self, limit, node, repeated=None):
        super(ExpansionError, self).__init__(limit)
        self.limit = limit
        self.node = node
        self.repeated = repeated


def expansion(root, max_values=None, max_bytes=None):
    """``(values, size)`` the node graph ``root`` expands to once every alias is replaced by what it names:
    ``values`` as :func:`construct_tree` counts them (the document, each mapping value, each sequence
    item), ``size`` about the bytes of its JSON (each scalar's length plus its quotes, each mapping's and
    sequence's punctuation). An alias of a 100 kB string counts 100 kB each time it is used.

    Linear in the number of nodes (each node is measured once, however many aliases name it), so a
    "billion laughs" document is measured without being built. Raises :class:`ExpansionError` as soon as
    a part exceeds ``max_values`` or ``max_bytes`` (``None``: no limit), or for a node that contains itself.
    """
    memo, active, repeated = {}, set(), [None]

    def walk(node):
        key = id(node)
        known = memo.get(key)
        if known is not None:
            if repeated[0] is None or known[1] > repeated[0][0]:
                repeated[0] = (known[1], node)
            return known
        if node.__class__ is yaml.ScalarNode:
            measured = (1, len(node.value) + 2)
        else:
            if key in active:
                raise ExpansionError("recursive", node)
            active.add(key)
            measured = _measure_children(node, walk)
            active.discard(key)
        if max_values is not None and measured[0] > max_values:
            raise ExpansionError("values", node, repeated[0])
        if max_bytes is not None and measured[1] > max_bytes:
            raise ExpansionError("bytes", node, repeated[0])
        memo[key] = measured
        return measured

    return walk(root)


def _measure_children(node, walk):
    values, size = 1, 2
    if node.__class__ is yaml.MappingNode:
        for key_node, value_node in node.value:
            key_values, key_size = walk(key_node)
            item_values, item_size = walk(value_node)
            values += item_values + (key_values - 1 if key_node.__class__ is not yaml.ScalarNode else 0)
            size += key_size + item_size + 2
    else:
        for item in node.value:
            item_values, item_size = walk(item)
            values += item_values
            size += item_size + 1
    return values, size


# --------------------------------------------------------------------------------------------
# The loader
# --------------------------------------------------------------------------------------------

try:
    from yaml.cyaml import CParser as _CParser
except ImportError:  # PyYAML built without libyaml
    _CParser = None


def _error(problem, node, context=None):
    return KubeYAMLError(context, node.start_mark if context else None, problem, node.start_mark)


class KubectlConstructor(yaml.constructor.BaseConstructor):
    """Constructs values as kubectl's YAML-to-JSON conversion produces them (see the module doc)."""

    yaml_constructors = {}
    yaml_multi_constructors = {}
    #: ``decrypt(b_vaulttext) -> bytes`` for ``!vault`` values (None: they are an error).
    decrypt = None
    #: Lines before the text being loaded (a document of a larger file), for line numbers in messages.
    line_offset = 0

    def construct_scalar_value(self, node):
        value = node.value
        if node.style == '"' and _SURROGATE.search(value):
            raise _error("found invalid Unicode character escape code (a UTF-16 surrogate)", node)
        tag = node.tag
        try:
            if tag == PLAIN_TAG:
                return resolve_plain(value)[1]
            if tag in RESOLVABLE_TAGS:
                return resolve_tagged(tag, value)
            if tag == BINARY_TAG:
                return decode_binary(value)
        except ValueError as exc:
            raise _error(str(exc), node) from None
        if tag in ("!vault", "!vault-encrypted"):
            return self.construct_vault(node)
        return value  # !!str, a plain "<<" outside a key, and every tag go-yaml ignores

    def construct_vault(self, node):
        if self.decrypt is None:
            raise _error("found a !vault value but no vault secrets are available", node)
        plain = self.decrypt(node.value.encode("utf-8"))  # pylint: disable=not-callable
        try:
            return plain.decode("utf-8")
        except UnicodeDecodeError:
            raise _error("the decrypted !vault value is not UTF-8 text", node) from None

    def json_value(self, value, node):
        if isinstance(value, (int, float)):
            try:
                return json_number(value)
            except ValueError as exc:
                raise _error(str(exc), node) from None
        return value

    def construct_sequence_value(self, node):
        items = []
        yield items
        items.extend(self.json_value(self.construct_object(child), child) for child in node.value)

    def construct_mapping_value(self, node):
        data = {}
        yield data
        explicit = {}
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                for source in self.merge_sources(value_node):
                    data.update(source)
                continue
            raw = self.construct_object(key_node, deep=True)
            try:
                key = mapping_key(raw)
            except ValueError as exc:
                raise _error(str(exc), key_node, "while constructing a mapping") from None
            if key in explicit:
                raise KubeYAMLError("while constructing a mapping", node.start_mark,
                                    "found duplicate key %r (first on line %d)" % (key, explicit[key] + 1 + self.line_offset),
                                    key_node.start_mark)
            explicit[key] = key_node.start_mark.line
            data[key] = self.json_value(self.construct_object(value_node), value_node)

    def merge_sources(self, node):
        """The mappings a merge key (``<<``) brings, lowest precedence first (go-yaml v2 order)."""
        if isinstance(node, yaml.MappingNode):
            nodes = [node]
        elif isinstance(node, yaml.SequenceNode) and all(isinstance(n, yaml.MappingNode) for n in node.value):
            nodes = node.value
        else:
            raise _error("map merge requires map or sequence of maps as the value", node,
                         "while constructing a mapping")
        return [self.construct_object(n, deep=True) for n in reversed(nodes)]

    #: False when the text may hold anchors: its node graph may then share nodes (aliases).
    is_tree = False
    #: Most values (see :func:`construct_tree`) a document built in one walk may hold (None: no limit);
    #: a larger one is left to the general constructor.
    max_values = None
    #: True once the last document was built by :func:`construct_tree`: plain JSON values, string keys,
    #: no shared parts, at most ``max_values`` values.
    built_as_tree = False

    def construct_document(self, node):
        self.built_as_tree = False
        if self.is_tree:
            try:
                data = construct_tree(node, self.max_values)
            except NotATree:
                pass
            else:
                self.built_as_tree = True
                return data
        return super().construct_document(node)

    def construct_any(self, node):
        if isinstance(node, yaml.MappingNode):
            return self.construct_mapping_value(node)
        if isinstance(node, yaml.SequenceNode):
            return self.construct_sequence_value(node)
        return self.construct_scalar_value(node)


KubectlConstructor.add_constructor(None, KubectlConstructor.construct_any)


class KubectlResolver(yaml.resolver.BaseResolver):
    """Plain scalars get :data:`PLAIN_TAG` (or the merge tag for a plain ``<<``); quoted ones ``!!str``."""

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode:
            if implicit[0]:
                return MERGE_TAG if value == "<<" else PLAIN_TAG
            return STR_TAG
        # the constructor goes by the node's kind, whatever the tag of a collection
        return self.DEFAULT_MAPPING_TAG if kind is yaml.MappingNode else self.DEFAULT_SEQUENCE_TAG

    # no path resolvers: the composer's calls for each node need not do anything
    def descend_resolver(self, current_node, current_index):
        pass

    def ascend_resolver(self):
        pass


if _CParser is not None:
    class KubectlLoader(_CParser, KubectlConstructor, KubectlResolver):  # pylint: disable=too-many-ancestors
        """Loads YAML as kubectl would, with libyaml's parser."""

        def __init__(self, stream):
            _CParser.__init__(self, stream)
            KubectlConstructor.__init__(self)
            KubectlResolver.__init__(self)
            self.is_tree = _without_anchors(stream)
else:  # pragma: no cover - PyYAML without libyaml
    class KubectlLoader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser,  # pylint: disable=too-many-ancestors
                        yaml.composer.Composer, KubectlConstructor, KubectlResolver):
        """Loads YAML as kubectl would, with PyYAML's pure-Python parser."""

        def __init__(self, stream):
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            KubectlConstructor.__init__(self)
            KubectlResolver.__init__(self)
            self.is_tree = _without_anchors(stream)


def _without_anchors(stream):
    """True if ``stream`` (text or bytes) cannot hold an anchor (``&name``), so no alias either."""
    if isinstance(stream, str):
        return "&" not in stream
    if isinstance(stream, bytes):
        return b"&" not in stream
    return False  # a file: read by the parser, not seen here


# --------------------------------------------------------------------------------------------
# Files: JSON streams and YAML documents
# --------------------------------------------------------------------------------------------

def is_json_stream(text):
    """kubectl's sniffing: a stream whose first non-blank character is ``{`` is read as JSON."""
    return text.lstrip()[:1] == "{"


def split_documents(text):
    """Split YAML text as kubectl's YAMLReader does: on lines starting with ``---``.

    Yields ``(index, first_line, chunk)`` (``first_line`` 1-based), each chunk its lines as they are in the
    text, every line ending with a line break (kubectl's line reader adds one to a last line without it,
    and nothing more: a mark at the end of a chunk is where PyYAML puts it reading the whole file). A
    separator line may only carry spaces and a comment after the ``---``, else ``ValueError(line,
    message)``. Every chunk after a
    separator counts, empty ones too (as PyYAML counts empty documents); the text before the first
    separator counts only if it holds more than blank lines and comments.
    """
    if not text.startswith("---") and "\n---" not in text:  # no separator: one document (most files)
        if _CONTENT.search(text):
            yield 0, 1, text if text.endswith("\n") else text + "\n"
        return
    chunks = []
    current, start = [], 1
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("---"):
            rest = line[3:].strip()
            if rest and not rest.startswith("#"):
                # the text is not quoted: it may be a Secret's value
                raise ValueError(number, "invalid YAML document separator: text follows '---' on its line (start the "
                                         "document on the next line)")
            chunks.append((start, current))
            current, start = [], number + 1
        else:
            current.append(line)
    if current and current[-1] == "":  # the text's last line break ends the last line, no empty line after it
        current.pop()
    chunks.append((start, current))
    if not _has_content(chunks[0][1]):
        chunks.pop(0)
    for index, (first_line, lines) in enumerate(chunks):
        yield index, first_line, "\n".join(lines) + "\n"


def _has_content(lines):
    return any(line.strip() and not line.lstrip().startswith("#") for line in lines)


#: A line holding more than blanks and a comment (what :func:`_has_content` looks for), in a whole text.
_CONTENT = re.compile(r"^[^\S\n]*[^\s#]", re.MULTILINE)


def _json_object(pairs):
    data = {}
    for key, value in pairs:
        if key in data:
            raise ValueError("found duplicate key %r" % (key,))
        data[key] = value
    return data


def _json_constant(name):
    raise ValueError("invalid character %r looking for beginning of value (%s is not JSON)" % (name[0], name))


def _json_float(text):
    return json_number(float(text))


def _json_int(text):
    return json_number(int(text))


_JSON = json.JSONDecoder(object_pairs_hook=_json_object, parse_constant=_json_constant,
                         parse_float=_json_float, parse_int=_json_int)
_BLANK = re.compile(r"\s*")


def iter_json_values(text):
    """Yield ``(line, value)`` for each value of a JSON stream (values one after another, as kubectl reads).

    Numbers as kubectl sends them (:func:`json_number`); a key written twice in one object is an error.
    Raises ``ValueError(line, message)``.
    """
    position = _BLANK.match(text).end()
    while position < len(text):
        line = text.count("\n", 0, position) + 1
        try:
            value, end = _JSON.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise ValueError(exc.lineno, "invalid JSON: %s" % exc.msg) from None
        except RecursionError:
            raise ValueError(line, "invalid JSON: nested too deeply") from None
        except ValueError as exc:
            raise ValueError(line, "invalid JSON: %s" % exc) from None
        yield line, value
        position = _BLANK.match(text, end).end()
