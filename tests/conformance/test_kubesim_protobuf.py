"""The simulator's reader of Kubernetes protobuf request bodies (``tests/kubesim/protobuf.py``), on the
bodies kubectl v1.32's typed clients send (``kubectl_protobuf_bodies.json``): each must decode to the
object kubectl itself prints for the same command with ``--dry-run=client -o json``. No server needed."""

import json
from pathlib import Path

import pytest

from tests.kubesim.protobuf import ProtobufError, decode_body, fields

RECORDED = json.loads((Path(__file__).parent / "kubectl_protobuf_bodies.json").read_text())["bodies"]


def _client_form(obj):
    """kubectl's client-side JSON without what a create never sends (timestamps, an empty status)."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not (k == "creationTimestamp" and v is None)}
        return [strip(v) for v in value] if isinstance(value, list) else value
    obj = strip(obj)
    obj.pop("status", None)
    return obj


@pytest.mark.parametrize("case", RECORDED, ids=[c["command"].split(" ", 2)[2] for c in RECORDED])
def test_kubectl_bodies_decode_to_what_kubectl_meant(case):
    assert decode_body(bytes.fromhex(case["body"])) == _client_form(case["client_json"])


def test_wire_format_reader():
    # field 1 varint 150, field 2 "hi", field 3 fixed64 1, field 4 fixed32 2
    data = bytes([0x08, 0x96, 0x01, 0x12, 0x02]) + b"hi" + bytes([0x19]) + (1).to_bytes(8, "little") + bytes([0x25]) + (2).to_bytes(4, "little")
    assert fields(data) == [(1, 0, 150), (2, 2, b"hi"), (3, 1, 1), (4, 5, 2)]
    for bad in (bytes([0x08]), bytes([0x12, 0x05, 0x61]), bytes([0x0B]), bytes([0x00, 0x01])):
        with pytest.raises(ProtobufError):
            fields(bad)


def test_unreadable_bodies_are_refused_with_a_reason():
    configmap = bytes.fromhex(RECORDED[0]["body"])
    with pytest.raises(ProtobufError, match="magic"):
        decode_body(configmap[4:])
    # a Pod (not in the tables): runtime.Unknown with typeMeta v1/Pod
    pod = b"k8s\x00" + bytes([0x0A, 0x09, 0x0A, 0x02]) + b"v1" + bytes([0x12, 0x03]) + b"Pod"
    with pytest.raises(ProtobufError, match="not v1 Pod"):
        decode_body(pod)
    # a ConfigMap message with a field number the tables do not know
    unknown_field = b"k8s\x00" + bytes([0x0A, 0x0F, 0x0A, 0x02]) + b"v1" + bytes([0x12, 0x09]) + b"ConfigMap" + bytes([0x12, 0x02, 0x48, 0x01])
    with pytest.raises(ProtobufError, match="field 9 of ConfigMap"):
        decode_body(unknown_field)
