"""sandbox_filters.py: the filters and tests a sandboxed template may use, pinned to ansible-core's own: each of
Ansible's filters written here gives what ansible-core's gives on the same arguments (the ansible-core installed)."""

import jinja2
import pytest
from ansible.plugins.filter import core, mathstuff, urls, urlsplit
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sandbox_filters as F

THEIRS = {}
for _module in (core, mathstuff, urlsplit, urls):
    THEIRS.update(_module.FilterModule().filters())
#: ansible-core's set filters take the Jinja2 environment first (``pass_environment``)
WITH_ENVIRONMENT = ("union", "intersect", "difference", "symmetric_difference")

CASES = [
 ("to_yaml", ({"b": [1, "x"], "a": {"c": None}},), {}),
 ("to_yaml", ({"b": 1, "a": 2},), {"sort_keys": False}),
 ("to_nice_yaml", ({"b": [1, {"x": "y"}], "a": True},), {}),
 ("to_nice_yaml", ({"a": [1, 2]},), {"indent": 2}),
 ("to_json", ({"b": 1, "a": [1, "é"]},), {}),
 ("to_json", ({"b": 1, "a": 2},), {"sort_keys": True}),
 ("to_nice_json", ({"b": 1, "a": {"c": [1, 2]}},), {}),
 ("to_nice_json", ({"b": 1},), {"indent": 2}),
 ("from_json", ('{"a": [1, 2.5, null]}',), {}),
 ("b64encode", ("héllo",), {}),
 ("b64encode", ("a?b>",), {"urlsafe": True}),
 ("b64decode", ("aMOpbGxv",), {}),
 ("b64decode", ("YT9iPg==",), {"urlsafe": True}),
 ("b64encode", ("x",), {"encoding": "utf-16"}),
 ("regex_replace", ("foo-bar-baz", "-(\\w)", ":\\1"), {}),
 ("regex_replace", ("aaa", "a", "b"), {"count": 2}),
 ("regex_replace", ("Foo\nfoo", "^foo", "x"), {"ignorecase": True, "multiline": True}),
 ("regex_findall", ("a1b22c333", "\\d+"), {}),
 ("regex_findall", ("A\na", "^a"), {"multiline": True, "ignorecase": True}),
 ("regex_search", ("server-12.example", "\\d+"), {}),
 ("regex_search", ("server-12.example", "(?P<n>\\d+)\\.(\\w+)", "\\g<n>", "\\2"), {}),
 ("regex_search", ("none here", "\\d+"), {}),
 ("regex_escape", ("a.b*c[d]",), {}),
 ("regex_escape", ("a.b*c[d]^$",), {"re_type": "posix_basic"}),
 ("bool", ("Yes",), {}), ("bool", ("off",), {}), ("bool", (1,), {}), ("bool", (None,), {}), ("bool", (True,), {}),
 ("bool", ("1",), {}), ("bool", (0,), {}),
 ("ternary", (True, "a", "b"), {}), ("ternary", (None, "a", "b", "n"), {}), ("ternary", (0, "a", "b"), {}),
 ("split", ("a,b,,c", ","), {}), ("split", ("a b  c",), {}), ("split", ("a,b,c", ",", 1), {}),
 ("quote", ("it's a test",), {}), ("quote", (None,), {}),
 ("type_debug", ({},), {}), ("type_debug", ("x",), {}),
 ("hash", ("text",), {}), ("hash", ("text", "sha256"), {}), ("md5", ("text",), {}), ("sha1", ("text",), {}),
 ("checksum", ("text",), {}),
 ("to_uuid", ("www.example.com",), {}), ("to_uuid", ("x", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"), {}),
 ("combine", ({"a": {"x": 1}, "l": [1]}, {"a": {"y": 2}, "l": [2]}), {}),
 ("combine", ({"a": {"x": 1}, "l": [1, 2]}, {"a": {"y": 2}, "l": [2, 3]}), {"recursive": True, "list_merge": "append_rp"}),
 ("combine", ([{"a": 1}, {"b": 2}],), {}),
 ("combine", ({"l": [1, 2]}, {"l": [2, 3]}), {"list_merge": "prepend"}),
 ("combine", ({"l": [1, 2]}, {"l": [2, 3]}), {"list_merge": "keep"}),
 ("combine", ({"l": [1, 2]}, {"l": [2, 3]}), {"list_merge": "append"}),
 ("combine", ({"l": [1, 2]}, {"l": [2, 3]}), {"list_merge": "prepend_rp"}),
 ("dict2items", ({"a": 1, "b": 2},), {}), ("dict2items", ({"a": 1},), {"key_name": "k", "value_name": "v"}),
 ("items2dict", ([{"key": "a", "value": 1}],), {}), ("items2dict", ([{"k": "a", "v": 1}],), {"key_name": "k", "value_name": "v"}),
 ("flatten", ([1, [2, [3, [4]]], None, "null"],), {}), ("flatten", ([1, [2, [3]]],), {"levels": 1}),
 ("flatten", ([1, None, [None]],), {"skip_nulls": False}),
 ("union", ([1, 2, 2], [2, 3]), {}), ("intersect", ([1, 2, 2, 3], [2, 3, 4]), {}),
 ("difference", ([1, 2, 2, 3], [2]), {}), ("symmetric_difference", ([1, 2, 3], [2, 3, 4]), {}),
 ("union", ([{"a": 1}], [{"a": 1}, {"b": 2}]), {}),
 ("zip", ([1, 2, 3], ["a", "b"]), {}), ("zip_longest", ([1, 2, 3], ["a"]), {}),
 ("zip_longest", ([1, 2], ["a"]), {"fillvalue": "-"}),
 ("log", (100, 10), {}), ("log", (8, 2), {}), ("root", (16,), {}), ("root", (27, 3), {}),
 ("basename", ("/a/b/c.txt",), {}), ("dirname", ("/a/b/c.txt",), {}), ("splitext", ("/a/b.tar.gz",), {}),
 ("normpath", ("/a/./b/../c",), {}), ("path_join", (["a", "b", "/c", "d"],), {}), ("path_join", ("a/b",), {}),
 ("urlsplit", ("https://u:p@example.com:8443/x?q=1#f",), {}), ("urlsplit", ("https://example.com:8443/x",), {"query": "port"}),
 ("urldecode", ("a%20b+c%2F",), {}),
]


def outcome(fn, args, kwargs, environment=False):
    try:
        value = fn(jinja2.Environment(), *args, **kwargs) if environment else fn(*args, **kwargs)
    except Exception as e:
        return "error", type(e).__name__
    if not isinstance(value, (str, bytes, dict, list, int, float, bool, type(None))):
        value = [list(v) if isinstance(v, tuple) else v for v in value]  # zip objects, tuples: what a template sees
    return "value", value


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name, args, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_filter_gives_what_ansible_cores_gives(name, args, kwargs):
    ours = outcome(F.ANSIBLE_FILTERS[name], args, kwargs)
    assert ours[0] == "value", ours
    assert ours == outcome(THEIRS[name], args, kwargs, environment=name in WITH_ENVIRONMENT)


def test_every_filter_of_ansibles_written_here_is_one_of_ansible_cores():
    assert set(F.ANSIBLE_FILTERS) <= set(THEIRS)
    assert set(name for name, _a, _k in CASES) == set(F.ANSIBLE_FILTERS) - {"mandatory"}


@pytest.mark.parametrize("call, message", [
    (lambda: F.to_yaml({}, Dumper=object), "to_yaml does not take Dumper here"),
    (lambda: F.to_json({}, cls=object), "to_json does not take cls here"),
    (lambda: F.regex_replace("aa", "a", "b", mandatory_count=3), "'a' should match 3 times, but matches 2 times"),
    (lambda: F.regex_search("a", "a", "3"), "regex_search: unknown argument '3'"),
    (lambda: F.regex_escape("a", "posix_extended"), "regex type 'posix_extended' is not supported"),
    (lambda: F.get_hash("a", "nohash"), "hash: unknown hash type 'nohash'"),
    (lambda: F.combine({}, {}, deep=True), "recursive and list_merge are the only options"),
    (lambda: F.combine({}, ["x"]), "combine: expects dictionaries, got str"),
    (lambda: F.combine({"l": [1]}, {"l": [2]}, list_merge="merge"), "list_merge must be replace, keep"),
    (lambda: F.dict2items([1]), "dict2items requires a dictionary, got list"),
    (lambda: F.items2dict([{"k": 1}]), "items2dict requires a list of dictionaries with 'key' and 'value'"),
    (lambda: F.split_url("https://x", "color"), "urlsplit: unknown URL component 'color'"),
    (lambda: F._regex_test("a", "a", match_type="find"), "match_type must be match, search or fullmatch"),
])
def test_arguments_a_filter_cannot_use_fail_with_the_filters_name(call, message):
    with pytest.raises(F.FilterError) as e:
        call()
    assert message in str(e.value)


def test_mandatory_and_undefined_arguments_fail_as_jinja2_does():
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    missing = env.undefined(name="replicas")
    with pytest.raises(F.FilterError, match="mandatory variable 'replicas' not defined"):
        F.mandatory(missing)
    with pytest.raises(F.FilterError, match="set replicas"):
        F.mandatory(missing, "set replicas")
    assert F.mandatory(3) == 3
    checked = F.allowed_filters()["to_json"]
    with pytest.raises(jinja2.UndefinedError, match="'replicas' is undefined"):
        checked(missing)
    assert checked.wrapped is F.to_json


def test_the_allow_lists_hold_jinjas_own_but_random_and_every_name_also_as_ansible_builtin():
    filters, tests = F.allowed_filters(), F.allowed_tests()
    assert "random" not in filters and "ansible.builtin.random" not in filters
    assert {"default", "upper", "to_yaml", "ansible.builtin.to_yaml", "ansible.builtin.default"} <= set(filters)
    assert all(("ansible.builtin." + name) in filters for name in F.ANSIBLE_FILTERS)
    assert {"defined", "match", "version", "ansible.builtin.version", "truthy"} <= set(tests)


@pytest.mark.parametrize("test, args, expected", [
    ("match", ("abc", "ab"), True), ("match", ("abc", "bc"), False), ("search", ("abc", "bc"), True),
    ("regex", ("abc", "^abc$"), True), ("version", ("1.2.10", "1.2.9", ">"), True),
    ("version_compare", ("1.0", "1.0"), True), ("subset", ([1], [1, 2]), True), ("superset", ([1], [1, 2]), False),
    ("contains", ([1, 2], 2), True), ("any", ([0, 1],), True), ("all", ([0, 1],), False),
    ("truthy", ("no",), True), ("truthy", ("no", True), False), ("falsy", ("", False), True),
])
def test_ansibles_tests_answer_as_ansible_cores(test, args, expected):
    from ansible.plugins.test import core as core_tests

    assert F.allowed_tests()[test](*args) is expected
    theirs = core_tests.TestModule().tests().get(test)
    if theirs is not None:
        assert bool(theirs(*args)) is expected
