"""objects.py: full-match name checks, Secret shape checks, Secret values kept out of API errors."""

import base64

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils import validation as v

SECRET = "SuperSecretValue123"


@pytest.mark.parametrize("value", ["foo\n", "foo\n\n", "a-b\n"])
def test_label_values_with_a_trailing_newline_are_refused(value):
    # "$" matches before a final newline: every name check is a full match
    assert not v.valid_label_value(value)
    assert not v.valid_label_key(value)
    assert v.invalid_name("", "ConfigMap", value) is not None
    assert v.invalid_name("", "Namespace", value) is not None


@pytest.mark.parametrize("manifest,problem", [
    ({"data": SECRET}, "data must be a mapping of keys to base64 strings, got a str"),
    ({"data": [SECRET]}, "got a list"),
    ({"data": 12345}, "got a int"),
    ({"data": {"k": [SECRET, "x"]}}, "data['k'] must be a base64 string, got a list"),
    ({"data": {"k": 12345678}}, "got a int"),
    ({"data": {"k": "not base64 " + SECRET}}, "data['k'] is not valid base64"),
    ({"stringData": {"k": {"nested": SECRET}}}, "stringData['k'] must be a string, got a dict"),
    ({"stringData": SECRET}, "stringData must be a mapping"),
])
def test_secret_shape_problems_never_name_the_value(manifest, problem):
    text = v.secret_shape_problem(manifest)
    assert problem in text and SECRET not in text and "12345" not in text


def test_good_secret_shapes():
    wrapped = base64.encodebytes(b"x" * 100).decode()  # line breaks, as `base64` writes them
    assert v.secret_shape_problem({"data": {"a": base64.b64encode(b"v").decode(), "b": "", "c": wrapped}}) is None
    assert v.secret_shape_problem({"stringData": {"port": 5432, "on": True, "s": "x"}}) is None
    assert v.secret_shape_problem({"type": "Opaque"}) is None


# messages recorded from kube-apiserver v1.36 for these bodies
@pytest.mark.parametrize("manifest,message", [
    ({"data": SECRET},
     "failed to create typed patch object (default/bad; /v1, Kind=Secret): .data: expected map, got &{" + SECRET + "}"),
    ({"data": {"k": [SECRET, "x"]}},
     "failed to create typed patch object (default/bad; /v1, Kind=Secret): .data.k: expected string, got "
     "&value.valueUnstructured{Value:[]interface {}{\"" + SECRET + "\", \"x\"}}"),
    ({"data": {"k": 12345678}},
     "failed to create typed patch object (default/bad; /v1, Kind=Secret): .data.k: expected string, got "
     "&value.valueUnstructured{Value:12345678}"),
    ({"stringData": {"k": SECRET}},
     f'Secret "bad" is invalid: data[k]: Invalid value: "{SECRET}": some rule'),
    ({"data": {"k": base64.b64encode(SECRET.encode()).decode()}},
     f"admission webhook denied the request: value {SECRET} is not allowed"),
])
def test_secret_error_messages_are_redacted(manifest, message):
    text = o.redact_secret_message(message, manifest)
    assert SECRET not in text and "12345678" not in text
    assert "<redacted>" in text
    assert text.split(":")[0] == message.split(":")[0]  # what failed is still said
