"""kubeyaml: YAML and JSON read as kubectl reads them (sigs.k8s.io/yaml over go-yaml v2).

Expected values were taken from kubectl 1.32 (``kubectl create --dry-run=client -o json``); the
differential test (below) re-checks the whole corpus against the kubectl on PATH.
"""

import json
import math
import re
import shutil
import subprocess

import pytest
import yaml
from ansible_collections.stacksync.k8s.plugins.plugin_utils import kubeyaml as K
from ansible_collections.stacksync.k8s.plugins.plugin_utils import render as R
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO


def load(text, decrypt=None):
    loader = K.KubectlLoader(text)
    loader.decrypt = decrypt
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


@pytest.mark.parametrize("text, tag, value", [
    ("=", "str", "="), ("1:20", "str", "1:20"), ("190:20:30", "str", "190:20:30"),
    ("yes", "bool", True), ("y", "bool", True), ("On", "bool", True), ("NO", "bool", False), ("off", "bool", False),
    ("yEs", "str", "yEs"), ("tRuE", "str", "tRuE"),
    ("", "null", None), ("~", "null", None), ("Null", "null", None), ("nUll", "str", "nUll"),
    ("017", "int", 15), ("0o17", "int", 15), ("0x1F", "int", 31), ("0X1f", "int", 31), ("0b101", "int", 5),
    ("-0b101", "int", -5), ("+12", "int", 12), ("1_000", "int", 1000), ("09", "float", 9.0), ("00", "int", 0),
    ("9223372036854775807", "int", 2 ** 63 - 1), ("-9223372036854775808", "int", -(2 ** 63)),
    ("1.5", "float", 1.5), ("1e3", "float", 1000.0), (".5", "float", 0.5), ("+.5", "float", 0.5), ("1.", "float", 1.0),
    ("685.230_15e+03", "float", 685230.15), ("1e400", "str", "1e400"), ("1.2.3", "str", "1.2.3"),
    ("2002-12-14", "timestamp", "2002-12-14"), ("2001-12-14t21:59:43.10-05:00", "timestamp", "2001-12-14t21:59:43.10-05:00"),
    ("2001-02-30", "str", "2001-02-30"), ("2001-12-14 21:59:43.10 -5", "str", "2001-12-14 21:59:43.10 -5"),
    ("0x", "str", "0x"), ("0xG", "str", "0xG"), ("<<", "str", "<<"), ("-", "str", "-"), ("+", "str", "+"),
])
def test_resolve_plain(text, tag, value):
    assert K.resolve_plain(text) == (tag, value)
    assert type(K.resolve_plain(text)[1]) is type(value)


def test_resolve_plain_uint64_and_specials():
    tag, value = K.resolve_plain("18446744073709551615")
    assert tag == "int" and isinstance(value, K.Uint64) and value == 2 ** 64 - 1
    assert K.resolve_plain("18446744073709551616") == ("float", 1.8446744073709552e19)
    assert K.resolve_plain("-9223372036854775809") == ("float", -9.223372036854776e18)
    assert math.isnan(K.resolve_plain(".NaN")[1]) and K.resolve_plain("-.Inf") == ("float", -math.inf)


@pytest.mark.parametrize("tag, text, value", [
    ("int", "12", 12), ("float", "1", 1.0), ("bool", "yes", True), ("null", "", None), ("str", "12", "12"),
    ("timestamp", "2001-12-14", "2001-12-14"),
])
def test_resolve_tagged(tag, text, value):
    assert K.resolve_tagged(K.TAG_PREFIX + tag, text) == value


@pytest.mark.parametrize("tag, text, message", [
    ("int", "twelve", "cannot decode !!str `twelve` as a !!int"), ("bool", "1", "cannot decode !!int `1` as a !!bool"),
    ("float", "9223372036854775808", "as a !!float"), ("timestamp", "foo", "as a !!timestamp"),
])
def test_resolve_tagged_mismatch(tag, text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        K.resolve_tagged(K.TAG_PREFIX + tag, text)


@pytest.mark.parametrize("value, expected", [
    (1.0, 1), (1000.0, 1000), (-0.0, 0), (1.5, 1.5), (1e20, 1e20), (1e21, 1e21), (2.0 ** 63, 2.0 ** 63),
    (-(2.0 ** 63), -(2.0 ** 63)),  # written -9223372036854776000: does not fit int64
    (1.2345678901234567e18, 1234567890123456800),  # shortest digits, as encoding/json writes it
    (2 ** 63, 2.0 ** 63), (-(2 ** 63) - 1, -(2.0 ** 63)), (5, 5), (True, True),
])
def test_json_number(value, expected):
    result = K.json_number(value)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_json_number_refuses_nan_and_infinities(value):
    with pytest.raises(ValueError, match="not a number JSON can carry"):
        K.json_number(value)


@pytest.mark.parametrize("value, expected", [
    (1.5, "1.5"), (1000.0, "1000"), (1234567.0, "1.234567e+06"), (0.1, "0.1"), (1e21, "1e+21"), (1e-5, "1e-05"),
    (123456789.0, "1.2345679e+08"), (1e6, "1e+06"), (-0.0, "-0"), (3.4e39, ".inf"), (math.nan, ".nan"),
    (-2.5, "-2.5"), (0.0001, "0.0001"),
])
def test_format_float_key(value, expected):
    assert K.format_float_key(value) == expected


@pytest.mark.parametrize("key, expected", [("a", "a"), (True, "true"), (False, "false"), (16, "16"), (1.5, "1.5")])
def test_mapping_key(key, expected):
    assert K.mapping_key(key) == expected


@pytest.mark.parametrize("key, message", [
    (None, "null"), (K.Uint64(2 ** 63), "uint64"), ([1], "list"), ({"a": 1}, "mapping"),
])
def test_mapping_key_refused(key, message):
    with pytest.raises(ValueError, match=message):
        K.mapping_key(key)


def test_loader_scalars_keys_and_numbers():
    doc = load("a: =\nb: 1:20\ny: yes\noff: on\n0x10: hex\n1.5: f\nc: 1.0\nd: 1e3\ne: 18446744073709551616\n"
               "t: 2002-12-14\nq: '017'\nm: 017\n")
    assert doc == {"a": "=", "b": "1:20", "true": True, "false": True, "16": "hex", "1.5": "f", "c": 1, "d": 1000,
                   "e": 1.8446744073709552e19, "t": "2002-12-14", "q": "017", "m": 15}
    assert type(doc["c"]) is int and type(doc["d"]) is int and type(doc["e"]) is float


def test_loader_merge_keys_apply_in_document_order():
    doc = load("base: &b {a: from-merge, b: from-merge}\nfirst: &f {k: first}\nsecond: &s {k: second}\n"
               "before: {a: explicit, <<: *b}\nafter: {<<: *b, a: explicit}\nlist: {<<: [*f, *s]}\n"
               "quoted: {'<<': literal}\nvalue: {v: <<}\n")
    assert doc["before"] == {"a": "from-merge", "b": "from-merge"}  # go-yaml: the merge overwrites what came before
    assert doc["after"] == {"a": "explicit", "b": "from-merge"}
    assert doc["list"] == {"k": "first"}  # earlier maps in the list win
    assert doc["quoted"] == {"<<": "literal"} and doc["value"] == {"v": "<<"}


def test_loader_tags():
    doc = load("bin: !!binary aGVsbG8=\nbad8: !!binary /+I=\nstr: !!str 12\nint: !!int '12'\ncustom: !Ref 12\n"
               "set: !!set {a, b}\nomap: !!omap [a: 1]\nmap: !custom {a: 1}\n")
    assert doc == {"bin": "hello", "bad8": "\ufffd\ufffd", "str": "12", "int": 12, "custom": "12",
                   "set": {"a": None, "b": None}, "omap": [{"a": 1}], "map": {"a": 1}}


@pytest.mark.parametrize("text, message", [
    ("a: 1\na: 2\n", "found duplicate key 'a' (first on line 1)"),
    ("1: a\n'1': b\n", "found duplicate key '1'"),
    ("y: a\ntrue: b\n", "found duplicate key 'true'"),
    ("a: !!binary 'not base64!'\n", "invalid base64"),
    ("a: .nan\n", "NaN is not a number JSON can carry"),
    ("[a]: 1\n", "invalid map key"),
    ("~: 1\n", "unsupported map key: null"),
    ("9223372036854775808: 1\n", "uint64"),
    ("<<: scalar\n", "map merge requires map or sequence of maps"),
    ('a: "\\uD83D\\uDE00"\n', "invalid Unicode character escape"),
    ("a: !vault x\n", "no vault secrets"),
])
def test_loader_errors(text, message):
    with pytest.raises(yaml.YAMLError) as info:
        load(text)
    assert message in str(info.value)


def test_loader_duplicate_key_error_points_at_the_second_key():
    with pytest.raises(K.KubeYAMLError) as info:
        load("data:\n  x: 1\n  y: 2\n  x: 3\n")
    assert info.value.problem_mark.line == 3


def test_loader_vault_values_are_decrypted():
    assert load("pw: !vault cipher\n", decrypt=lambda b: b"plain:" + b) == {"pw": "plain:cipher"}


@pytest.mark.parametrize("text, chunks", [
    ("a: 1\n", [(0, 1, "a: 1\n")]), ("a: 1", [(0, 1, "a: 1\n")]),
    ("---\na: 1\n---\n---\n# c\n---\nb: 2\n", [(0, 2, "a: 1\n"), (1, 4, "\n"), (2, 5, "# c\n"), (3, 7, "b: 2\n")]),
    ("# header\n---  # comment\r\na: 1\n", [(0, 3, "a: 1\n")]),
    ("", []), ("# only a comment\n", []),
    ("a: 1\n---\n", [(0, 1, "a: 1\n"), (1, 3, "\n")]),
    ("a: |\n  ---\n  x\n", [(0, 1, "a: |\n  ---\n  x\n")]),  # indented: not a separator
])
def test_split_documents(text, chunks):
    assert list(K.split_documents(text)) == chunks


SEPARATOR = "invalid YAML document separator: text follows '---' on its line (start the document on the next line)"


@pytest.mark.parametrize("text, line, message", [
    ("a: 1\n--- {b: 2}\n", 2, SEPARATOR),
    ("a: 1\n----\n", 2, SEPARATOR),
    ("a: 1\n--- password: hunter2\n", 2, SEPARATOR),  # never quoted: it may be a Secret's value
])
def test_split_documents_refuses_content_after_the_separator(text, line, message):
    with pytest.raises(ValueError) as info:
        list(K.split_documents(text))
    assert info.value.args == (line, message)


def test_json_stream():
    assert K.is_json_stream('  \n{"a": 1}') and not K.is_json_stream("---\n{a: 1}") and not K.is_json_stream("[1]")
    values = list(K.iter_json_values('{"a": 1.0, "b": 1e3, "c": 18446744073709551616}\n\n{"d": "x"}'))
    assert values == [(1, {"a": 1, "b": 1000, "c": 1.8446744073709552e19}), (3, {"d": "x"})]
    assert type(values[0][1]["a"]) is int


@pytest.mark.parametrize("text, line, message", [
    ('{"a": 1, "a": 2}', 1, "found duplicate key 'a'"),
    ('{"a": NaN}', 1, "NaN is not JSON"),
    ('{"a": 1}\n---\nb: 2\n', 2, "invalid JSON"),
    ('{a: 1}', 1, "invalid JSON"),
])
def test_json_stream_errors(text, line, message):
    with pytest.raises(ValueError) as info:
        list(K.iter_json_values(text))
    assert info.value.args[0] == line and message in info.value.args[1]


# ------------------------------------------------------------------------------------------
# Differential test: the manifests lookup reads every file of tests/fixtures/yaml-parity as kubectl does.
#
# Each file goes through ``render()`` (the lookup's reader) and through
# ``kubectl create --dry-run=client -o json --validate=false -f FILE`` against the ``kube`` cluster (the
# simulator, or the real server named by ``STACKSYNC_TEST_KUBECONFIG``: kubectl needs a server for its
# REST mapping, nothing is created). The objects must be the same JSON (numbers compared as kubectl
# holds them: integers within int64, other numbers float64), or both must fail.
#
# ``STRICTER`` lists the files the lookup refuses on purpose although kubectl reads them (each would
# silently lose data that a pruning sync would then delete); the test checks that kubectl does read them,
# so the list stays honest.
# ------------------------------------------------------------------------------------------

CORPUS = REPO / "tests" / "fixtures" / "yaml-parity"


FILES = sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".yaml", ".yml", ".json"))


KUBECTL = shutil.which("kubectl")


#: file -> why the lookup refuses what kubectl reads.
STRICTER = {
    "duplicate-keys.yaml": "a key written twice: kubectl keeps the last value silently",
    "duplicate-top-level.yaml": "a top-level key written twice: kubectl drops the first data block",
    "duplicate-after-stringify.yaml": "keys 1 and '1' are one JSON key: kubectl keeps one of them at random",
    "duplicate-bool-keys.yaml": "keys y and true are both 'true' for kubectl",
    "json-duplicate-keys.json": "a JSON key written twice: kubectl keeps the last value silently",
    "document-end-then-more.yaml": "content after '...': kubectl ignores it (an object the sync would prune)",
}


#: file -> a difference still open (the test fails, strictly, once it is gone).
KNOWN_DIFFERENCES = {
    "non-specific-tag.yaml": "'! 12' (the non-specific tag) is the string '12' for kubectl; libyaml reports it "
                             "to PyYAML as an untagged plain scalar, read as the integer 12",
}


INT64 = (-(2 ** 63), 2 ** 63 - 1)


def _kubectl_int(text):
    value = int(text)
    return value if INT64[0] <= value <= INT64[1] else float(value)


def kubectl_objects(path, kubeconfig, cache_dir, flag="-f"):
    """``(ok, objects or error text)`` of kubectl reading ``path`` (``flag="-k"``: a kustomization)."""
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir", str(cache_dir), "create", "--dry-run=client",
         "-o", "json", "--validate=false", flag, str(path)],
        capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        return False, proc.stderr.strip()
    decoder = json.JSONDecoder(parse_int=_kubectl_int)
    text, position, objects = proc.stdout, 0, []
    while text[position:].strip():
        value, position = decoder.raw_decode(text, len(text) - len(text[position:].lstrip()))
        objects.extend(value["items"] if value.get("kind") == "List" and "items" in value else [value])
    return True, objects


def lookup_objects(path):
    """``(ok, objects or RenderError)`` of the lookup's reader on ``path``."""
    try:
        return True, R.render(str(path), source_annotation=False)
    except R.RenderError as exc:
        return False, exc


def canonical(objects):
    return [json.dumps(o, sort_keys=True) for o in objects]


@pytest.fixture(scope="module")
def kubectl_env(request, tmp_path_factory):
    if KUBECTL is None:
        pytest.skip("kubectl is not on PATH: the differential YAML test compares the lookup with kubectl")
    kube = request.getfixturevalue("kube")  # a cluster only once kubectl is known to be there
    return kube.kubeconfig, tmp_path_factory.mktemp("kubectl-cache")


def test_corpus_is_not_empty():
    assert len(FILES) >= 40
    assert set(STRICTER) | set(KNOWN_DIFFERENCES) <= set(FILES)


@pytest.mark.parametrize("name", [
    pytest.param(f, marks=pytest.mark.xfail(reason=KNOWN_DIFFERENCES[f], strict=True)) if f in KNOWN_DIFFERENCES else f
    for f in FILES])
def test_lookup_reads_the_file_as_kubectl_does(name, kubectl_env):
    path = CORPUS / name
    kubectl_ok, theirs = kubectl_objects(path, *kubectl_env)
    ours_ok, ours = lookup_objects(path)
    if name in STRICTER:
        assert kubectl_ok, f"kubectl now refuses {name} too: drop it from STRICTER ({theirs})"
        assert not ours_ok, f"the lookup read {name}, which it should refuse: {STRICTER[name]}"
        assert ours.path == name, str(ours)
        return
    if not kubectl_ok:
        assert not ours_ok, f"kubectl refuses {name} ({theirs}) but the lookup read {ours!r}"
        assert ours.path == name and ours.doc is not None, str(ours)
        return
    assert ours_ok, f"kubectl reads {name} but the lookup fails: {ours}"
    for ours_obj, theirs_obj in zip(ours, theirs):
        if "namespace" not in ours_obj["metadata"]:  # kubectl create fills in the context's namespace
            theirs_obj["metadata"].pop("namespace", None)
    assert canonical(ours) == canonical(theirs)


def test_kustomize_output_reads_as_kubectl_create_k(kubectl_env):
    """A kustomization is rendered with kustomize and its output read by the lookup: the same objects as
    ``kubectl create -k`` (kustomize quotes the strings its YAML 1.2 reading kept as strings)."""
    path = CORPUS / "kustomize"
    kubectl_ok, theirs = kubectl_objects(path, *kubectl_env, flag="-k")
    ours_ok, ours = lookup_objects(path)
    assert kubectl_ok and ours_ok, (theirs, ours)
    for obj in theirs:
        obj["metadata"].pop("namespace", None)
    assert canonical(ours) == canonical(theirs)
    assert ours[0]["data"]["plain"] == "yes" and ours[0]["data"]["oct"] == 15


# ------------------------------------------------------------------------------------------
# construct_tree: the one-walk constructor must give exactly what the general constructor gives
# ------------------------------------------------------------------------------------------

def load_both(text):
    """``(tree path outcome, general path outcome)`` of one document; an outcome is ``("ok", typed value)``
    or ``("error", message)``."""
    outcomes = []
    for tree in (True, False):
        loader = K.KubectlLoader(text)
        assert loader.is_tree == ("&" not in text)
        loader.is_tree = loader.is_tree and tree
        try:
            outcomes.append(("ok", typed(loader.get_single_data())))
        except yaml.YAMLError as exc:
            outcomes.append(("error", str(exc)))
        finally:
            loader.dispose()
    return outcomes


def typed(value):
    """``value`` with each leaf's exact type: 1, 1.0, True and Uint64 told apart."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return type(value).__name__, value


def test_tree_path_leaves_surrogates_to_the_general_constructor():
    """libyaml refuses surrogate escapes itself; PyYAML's own parser (without libyaml) hands them on."""
    key = yaml.ScalarNode(K.PLAIN_TAG, "a")
    node = yaml.MappingNode(K.TAG_PREFIX + "map", [(key, yaml.ScalarNode(K.STR_TAG, "\ud83d", style='"'))])
    with pytest.raises(K.NotATree):
        K.construct_tree(node)
    node.value[0][1].style = "'"  # written as is: a single-quoted scalar has no escapes
    assert K.construct_tree(node) == {"a": "\ud83d"}


def tree_of(text):
    loader = K.KubectlLoader(text)
    try:
        return K.construct_tree(loader.get_single_node())
    finally:
        loader.dispose()


def corpus_documents():
    for name in FILES:
        text = (CORPUS / name).read_text(encoding="utf-8", errors="surrogateescape").lstrip("\ufeff")
        if K.is_json_stream(text):
            continue
        try:
            chunks = list(K.split_documents(text))
        except ValueError:
            continue
        for index, _, chunk in chunks:
            yield pytest.param(chunk, id=f"{name}#{index}")


@pytest.mark.parametrize("text", list(corpus_documents()))
def test_tree_path_reads_the_parity_corpus_as_the_general_constructor(text):
    try:
        fast, general = load_both(text)
    except (yaml.YAMLError, UnicodeError):
        return  # the parser refuses it: no constructor runs
    assert fast == general


def test_tree_path_is_taken_for_a_plain_manifest(monkeypatch):
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {x: 'y'}}\n"
            "data: {n: 017, o: 017, f: 1.0, b: yes, t: 2002-12-14, u: 18446744073709551615, s: \"q\", e: '', z: ~}\n"
            "list: [1, [2, {k: v}], !!str 3]\n1.5: k\non: k\n")

    def general(*_):
        raise AssertionError("the general constructor ran")

    monkeypatch.setattr(K.KubectlConstructor, "construct_any", general)
    doc = load(text)
    assert typed(doc) == typed({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}},
        "data": {"false": 15, "o": 15, "f": 1, "b": True, "t": "2002-12-14", "u": 1.8446744073709552e19, "s": "q", "e": "",
                 "z": None},
        "list": [1, [2, {"k": "v"}], "3"], "1.5": "k", "true": "k"})


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: *x\n",  # an anchor: the text is not walked as a tree at all
])
def test_tree_path_not_taken_with_anchors(text):
    assert not K.KubectlLoader(text).is_tree and not K.KubectlLoader(text.encode()).is_tree


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n", "y: a\ntrue: b\n", "<<: {a: 1}\n", "a: !!int '1'\n", "a: !custom x\n", "a: !vault x\n",
    "a: !!binary aGVsbG8=\n", "a: .nan\n", "~: 1\n", "9223372036854775808: 1\n", "[a]: 1\n",
    "12\n", "plain\n",
    "a: " + "[" * (K.TREE_MAX_DEPTH + 2) + "]" * (K.TREE_MAX_DEPTH + 2) + "\n",
])
def test_tree_path_leaves_the_rest_to_the_general_constructor(text):
    with pytest.raises(K.NotATree):
        tree_of(text)


_TOKENS = ["a", "yes", "No", "on", "y", "n", "~", "null", "Null", "true", "FALSE", "0", "017", "09", "0x1F", "0o17",
           "0b101", "-0b1", "+12", "1_000", "1.0", "1e3", "1.", ".5", "-.5", "+.inf", ".NaN", "1e400",
           "9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
           "-9223372036854775809", "2002-12-14", "2001-02-30", "2001-12-14t21:59:43.10-05:00", "1:20", "=", "-",
           "<<", "1.2.3", "v1", "10m", "0.5Gi", "1.5"]
_SCALARS = st.one_of(st.sampled_from(_TOKENS), st.text(st.sampled_from("ay01.-+_e:x ~"), max_size=6))


def _plain_yaml(value, indent=""):
    """``value`` (nested dicts / lists of token strings) as block YAML with every scalar plain and unquoted."""
    lines = []
    items = value.items() if isinstance(value, dict) else (("-", v) for v in value)
    for key, item in items:
        head = indent + (key if key == "-" else key + ":")
        if isinstance(item, (dict, list)) and item:
            lines.append(head)
            lines.append(_plain_yaml(item, indent + "  "))
        else:
            written = "{}" if item == {} else "[]" if item == [] else item
            lines.append(f"{head} {written}")
    return "\n".join(lines)


_PLAIN_TOKENS = st.sampled_from([t for t in _TOKENS if t not in ("-", "<<")])
_TREES = st.recursive(_PLAIN_TOKENS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_PLAIN_TOKENS, inner, min_size=1, max_size=4)), max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_PLAIN_TOKENS, _TREES, min_size=1, max_size=5))
def test_tree_path_matches_the_general_constructor_on_plain_scalars(value):
    fast, general = load_both(_plain_yaml(value) + "\n")
    assert fast == general


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_SCALARS, inner, max_size=4)), max_leaves=12),
    st.sampled_from([None, '"', "'"]), st.booleans())
def test_tree_path_matches_the_general_constructor_on_dumped_yaml(value, style, flow):
    fast, general = load_both(yaml.safe_dump({"doc": value}, default_style=style, default_flow_style=flow))
    assert fast == general


def test_tree_path_value_limit():
    text = "a: [1, 2, {b: 3}]\nc: x\n"  # the document, a, its 3 items, b, c: 7 values
    loader = K.KubectlLoader(text)
    node = loader.get_single_node()
    assert K.construct_tree(node, 7) == {"a": [1, 2, {"b": 3}], "c": "x"}
    with pytest.raises(K.NotATree):
        K.construct_tree(node, 6)
    loader.max_values = 6  # the general constructor builds it: the caller counts again
    assert loader.construct_document(node) == {"a": [1, 2, {"b": 3}], "c": "x"} and not loader.built_as_tree
    loader.max_values = 7
    assert loader.construct_document(node) == {"a": [1, 2, {"b": 3}], "c": "x"} and loader.built_as_tree


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from(["a", " ", "\t", "#", "-", "\n", "\r", "\x85", "\u2028", "\u3000", "\x0c", ":"]),
               max_size=24))
def test_split_documents_without_separators_is_one_document_if_it_has_content(text):
    if text.startswith("---") or "\n---" in text:
        return
    lines = text.split("\n")
    has_content = any(line.strip() and not line.lstrip().startswith("#") for line in lines)
    assert list(K.split_documents(text)) == ([(0, 1, text if text.endswith("\n") else text + "\n")] if has_content else [])


# ------------------------------------------------------------------------------------------
# expansion: what anchors and aliases expand a document to, measured on its nodes
# ------------------------------------------------------------------------------------------

def _node(text):
    return yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def test_expansion_counts_what_each_alias_names_each_time():
    plain = K.expansion(_node("a: xxxxxxxxxx\nb: [xxxxxxxxxx, xxxxxxxxxx]\n"))
    aliased = K.expansion(_node("a: &x xxxxxxxxxx\nb: [*x, *x]\n"))
    assert aliased == plain == (5, 2 + (3 + 12 + 2) + (3 + (2 + 13 * 2) + 2))  # the same document, written two ways


def test_expansion_of_aliases_of_aliases_is_measured_without_building_it():
    levels = ["a: &a [" + ", ".join(["lol"] * 10) + "]"]
    levels += [f"{c}: &{c} [" + ", ".join(["*" + p] * 10) + "]" for p, c in zip("abcdefghijklmnopqrs", "bcdefghijklmnopqrst")]
    values, size = K.expansion(_node("\n".join(levels) + "\n"))  # 10 ** 20 values: measured, not built
    assert values > 10 ** 20 and size > 5 * 10 ** 20


@pytest.mark.parametrize("limits, kind", [({"max_values": 20}, "values"), ({"max_bytes": 1000}, "bytes")])
def test_expansion_stops_at_the_first_part_over_a_limit(limits, kind):
    node = _node("big: &b " + "x" * 400 + "\nlist: [*b, *b, *b]\n")
    assert K.expansion(node, max_values=20, max_bytes=2000)[1] > 1000
    with pytest.raises(K.ExpansionError) as info:
        K.expansion(_node("big: &b " + "x" * 400 + "\nlist: [*b, *b, *b]\nmore: [" + ", ".join(["1"] * 30) + "]\n"),
                    **limits)
    assert info.value.limit == kind
    if kind == "bytes":  # the largest part aliases repeat, and where it is
        size, repeated = info.value.repeated
        assert size == 402 and repeated.start_mark.line == 0


def test_expansion_refuses_a_node_that_contains_itself():
    with pytest.raises(K.ExpansionError) as info:
        K.expansion(_node("a: &a\n  b: *a\n"))
    assert info.value.limit == "recursive"
