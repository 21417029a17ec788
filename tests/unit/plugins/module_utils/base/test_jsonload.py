"""jsonload.py: the API server's answers decoded by orjson when it is installed, to exactly what ``json.loads`` gives
(the same types too), and by ``json`` for whatever orjson refuses, with json's own errors."""

import json
import sys

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base import jsonload
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.plugins.plugin_utils.test_kubeyaml import typed  # 1, 1.0 and True told apart (json's NaN is one object)

try:
    import orjson
except ImportError:
    orjson = None

needs_orjson = pytest.mark.skipif(orjson is None, reason="orjson is not installed (this layer tests json alone)")


@pytest.fixture(params=["orjson", "json"])
def decoder(request, monkeypatch):
    """jsonload with orjson (when installed) and without it."""
    if request.param == "orjson":
        if orjson is None:
            pytest.skip("orjson is not installed")
        monkeypatch.setattr(jsonload, "orjson", orjson)
    else:
        monkeypatch.setattr(jsonload, "orjson", None)
    return jsonload


LIST = (b'{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"eyJ2Ijo"},'
        b'"items":[{"metadata":{"name":"a","namespace":"ns","uid":"u-1","resourceVersion":"41",'
        b'"labels":{"stacksync.io/stack":"s"},"annotations":{"x":"\\u00e9\\ud83d\\ude00 \\"q\\" \\\\ \\n"},'
        b'"managedFields":[{"manager":"stacksync","operation":"Apply","apiVersion":"v1","time":"2026-12-07T09:00:00Z",'
        b'"fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}},"f:metadata":{"f:labels":{"f:stacksync.io/stack":{}}}}}]},'
        b'"data":{"k":"v","n":"1"}}]}')

DOCUMENTS = [
    LIST,
    b'{"spec":{"replicas":3,"ratio":0.5,"big":9223372036854775807,"neg":-9223372036854775808,"u64":18446744073709551615,'
    b'"exp":1e3,"small":1.5e-07,"zero":-0.0,"negzero":-0,"t":true,"f":false,"n":null,"empty":{},"none":[]}}',
    '{"unicode":"\u00e9\u4e2d\U0001f600","key \u00e9":"v"}'.encode("utf-8"),
    b'{"a":1,"a":2}',  # a duplicate key: the last one
    b' \n[1, 2 ,{"a" : "b"}]\t',
    b'"just a string"',
    b'{"nul":"\\u0000","ctl":"\\t\\b\\f\\r\\/"}',
]


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_valid_json_decodes_as_json_decodes_it(decoder, doc):
    assert typed(decoder.loads(doc)) == typed(json.loads(doc))
    assert typed(decoder.loads(doc.decode("utf-8"))) == typed(json.loads(doc))


# what orjson refuses: json decodes it as it would without orjson
REFUSED = [b"[NaN]", b"[Infinity, -Infinity]", b"[1e400]", b'["\\ud800"]', b"\xef\xbb\xbf[1]",
           b"[123456789012345678901234567890.5]"]


@pytest.mark.parametrize("doc", REFUSED, ids=range(len(REFUSED)))
def test_what_orjson_refuses_is_decoded_by_json(decoder, doc):
    assert typed(decoder.loads(doc)) == typed(json.loads(doc))


@pytest.mark.parametrize("doc", [b"[1]x", b"{", b"", b'{"a":}', b"[1,]", b"{'a':1}", b'["\xff"]', b"[01]"])
def test_invalid_json_raises_the_error_json_raises(decoder, doc):
    with pytest.raises(ValueError) as expected:
        json.loads(doc)
    with pytest.raises(type(expected.value)) as got:
        decoder.loads(doc)
    assert str(got.value) == str(expected.value)


def test_nesting_deeper_than_orjson_allows_is_decoded_by_json(decoder):
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10000)
    try:
        doc = b"[" * 1100 + b"]" * 1100  # orjson stops at 1024 levels
        assert decoder.loads(doc) == json.loads(doc)
    finally:
        sys.setrecursionlimit(limit)


def test_nesting_too_deep_for_json_raises_what_json_raises(decoder):
    doc = b"[" * 100000 + b"]" * 100000
    with pytest.raises(RecursionError):
        json.loads(doc)
    with pytest.raises(RecursionError):
        decoder.loads(doc)


@needs_orjson
def test_an_integer_beyond_64_bits_is_the_float_the_server_holds(monkeypatch):
    """The documented difference: kube-apiserver writes a custom resource's 2**64 as 18446744073709552000."""
    monkeypatch.setattr(jsonload, "orjson", orjson)
    value = jsonload.loads(b'{"spec":{"a":18446744073709552000}}')["spec"]["a"]
    assert isinstance(value, float) and value == 2 ** 64
    assert json.loads(b"18446744073709552000") == 18446744073709552000 != 2 ** 64


@needs_orjson
def test_orjson_decodes_when_installed(monkeypatch):
    calls = []
    monkeypatch.setattr(jsonload, "orjson", type("Spy", (), {"loads": staticmethod(lambda d: calls.append(d) or orjson.loads(d))}))
    assert jsonload.loads(LIST)["items"][0]["data"] == {"k": "v", "n": "1"}
    assert calls == [LIST]


def test_without_orjson_json_decodes(monkeypatch):
    monkeypatch.setattr(jsonload, "orjson", None)
    assert jsonload.loads(LIST) == json.loads(LIST)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2 ** 63), max_value=2 ** 64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(value=json_values, ascii_only=st.booleans())
def test_any_json_within_64_bits_decodes_as_json_decodes_it(value, ascii_only):
    doc = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    try:
        expected = json.loads(doc)
    except ValueError:  # a lone surrogate written without escapes: not UTF-8
        with pytest.raises(ValueError):
            jsonload.loads(doc)
        return
    assert typed(jsonload.loads(doc)) == typed(expected)
