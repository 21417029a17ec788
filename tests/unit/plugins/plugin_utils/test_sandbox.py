"""Unit tests for plugins/plugin_utils/sandbox.py: the sandbox that renders the templates of an untrusted
repository. A corpus of escapes (each refused, naming the line and what was refused), what templates may
do (and that it renders as Ansible renders it), the bounds, the variables given."""

import os

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sandbox as S
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sandbox_filters as F

from tests.unit.plugins.plugin_utils.test_render import write

SECRET = "s3cr3t-token-of-another-source"


@pytest.fixture
def source(tmp_path):
    """A source's directory (``apps``) in a checkout, a file next to the checkout and a symlink leading to it."""
    write(tmp_path, {
        "checkout/apps/data.inc": 'from_include: "{{ name | upper }}"\n',
        "checkout/apps/sub/nested.inc": "{% include 'data.inc' %}",
        "checkout/apps/bad.inc": "x\n{{ lookup('pipe', 'id') }}\n",
        "checkout/apps/macros.j2": "{% macro label(k, v) %}{{ k }}: {{ v | to_json }}{% endmacro %}",
        "checkout/other/x.inc": "other source's file\n",
        "outside.txt": SECRET + "\n",
    })
    os.symlink(str(tmp_path / "outside.txt"), str(tmp_path / "checkout" / "apps" / "link.inc"))
    write(tmp_path, {"checkout/apps/.git/config": "[remote]\n"})
    os.symlink(str(tmp_path / "checkout" / "apps" / ".git" / "config"), str(tmp_path / "checkout" / "apps" / "gitlink.inc"))
    return tmp_path / "checkout" / "apps"


def render(source, text, variables=None, max_output=100000):
    return S.render_template(text, str(source / "cm.yaml.j2"), str(source), dict({"name": "web"}, **(variables or {})),
                             max_output)


def refusal(source, text, variables=None, max_output=100000):
    with pytest.raises(S.TemplateFailure) as info:
        render(source, text, variables, max_output)
    return info.value


# ------------------------------------------------------------------------------------------
# The corpus of escapes: each is refused, naming the line and what was refused
# ------------------------------------------------------------------------------------------

#: id -> (template, words the refusal names); the refused construct is on line 2 of each
ESCAPES = {
    # lookups, in every spelling
    "lookup": ("{{ lookup('pipe', 'touch /tmp/pwned') }}", "'lookup'"),
    "lookup-fqcn": ('{{ lookup("ansible.builtin.pipe", "id") }}', "'lookup'"),
    "lookup-spaces": ("{{ lookup ( 'file' , '/etc/passwd' ) }}", "'lookup'"),
    "query": ("{{ query('file', '/etc/passwd') }}", "'query'"),
    "q": ("{{ q('env', 'HOME') }}", "'q'"),
    "lookup-aliased": ("{% set f = lookup %}{{ f('pipe', 'id') }}", "'lookup'"),
    "lookup-parenthesised": ("{{ (lookup)('pipe', 'id') }}", "'lookup'"),
    "lookup-in-a-loop": ("{% for l in query('lines', 'id') %}{{ l }}{% endfor %}", "'query'"),
    "lookup-in-a-condition": ("{% if lookup('pipe', 'id') %}x{% endif %}", "'lookup'"),
    "lookup-as-a-filter": ("{{ 'pipe' | lookup }}", "filter 'lookup'"),
    "lookup-guarded": ("{{ lookup('pipe', 'id') if lookup is defined else '' }}", "'lookup'"),
    # the play's variables
    "hostvars": ("{{ hostvars['the-cluster'] | to_json }}", "'hostvars'"),
    "hostvars-attribute": ("{{ hostvars.localhost.stacksync_kubeconfig }}", "'hostvars'"),
    "vars": ("{{ vars['kubeconfig'] }}", "'vars'"),
    "groups": ("{{ groups.all }}", "'groups'"),
    "environment": ("{{ environment }}", "'environment'"),
    # attribute escapes
    "class-mro-subclasses": ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "'__subclasses__'"),
    "globals-of-cycler": ("{{ cycler.__init__.__globals__.os.popen('id').read() }}", "'__globals__'"),
    "globals-of-range": ("{{ range.__globals__ }}", "'__globals__'"),
    "namespace-init": ("{{ namespace.__init__.__globals__ }}", "'__globals__'"),
    "self-context": ("{{ self._TemplateReference__context }}", "'_TemplateReference__context'"),
    "item-built-at-runtime": ("{{ name['__cla' ~ 'ss__'] }}", "'__class__'"),
    "attr-filter": ("{{ name | attr('__class__') }}", "'__class__'"),
    "attr-filter-built": ("{{ name | attr('_' ~ '_class__') }}", "'__class__'"),
    "map-attribute": ("{{ [1] | map(attribute='__class__') | list }}", "'__class__'"),
    "format-field": ("{{ '{0.__class__}'.format(name) }}", "'__class__'"),
    "mro-of-a-type": ("{{ dict.mro() }}", "'mro'"),
    "method-self": ("{{ name.upper.__self__ }}", "'__self__'"),
    "macro-internals": ("{% macro m() %}{% endmacro %}{{ m._func }}", "'_func'"),
    "function-attribute": ("{{ range.x }}", "attribute 'x' of a value of type function"),
    "function-item": ("{{ joiner['x'] }}", "attribute 'x' of a value of type type"),
    "mutation": ("{% set l = [] %}{{ l.append(1) }}", "'append'"),
    # filters and tests that touch the controller, its files or the network (or a vault)
    "fileglob": ("{{ '/etc/*' | fileglob }}", "filter 'fileglob'"),
    "fileglob-fqcn": ("{{ '/etc/*' | ansible.builtin.fileglob }}", "filter 'ansible.builtin.fileglob'"),
    "expanduser": ("{{ '~' | expanduser }}", "filter 'expanduser'"),
    "expandvars": ("{{ '$HOME' | expandvars }}", "filter 'expandvars'"),
    "realpath": ("{{ '.' | realpath }}", "filter 'realpath'"),
    "unvault": ("{{ 'x' | unvault('secret') }}", "filter 'unvault'"),
    "from-yaml": ("{{ '!vault |\\n  x' | from_yaml }}", "filter 'from_yaml'"),
    "password-hash": ("{{ 'x' | password_hash }}", "filter 'password_hash'"),
    "random": ("{{ [1, 2] | random }}", "filter 'random'"),
    "test-file": ("{{ '/etc/passwd' is file }}", "test 'file'"),
    "test-exists": ("{{ '/etc/passwd' is exists }}", "test 'exists'"),
    "test-vault-encrypted": ("{{ name is vault_encrypted }}", "test 'vault_encrypted'"),
    # includes, imports and extends outside the source's directory
    "include-absolute": ("{% include '/etc/passwd' %}", "'/etc/passwd' is an absolute path"),
    "include-home": ("{% include '~/.ssh/id_rsa' %}", "'~/.ssh/id_rsa' is an absolute path"),
    "include-parent": ("{% include '../../outside.txt' %}", "'../../outside.txt' leaves the source's directory"),
    "include-other-source": ("{% include '../other/x.inc' %}", "'../other/x.inc' leaves the source's directory"),
    "include-dotdot-inside": ("{% include 'sub/../../outside.txt' %}", "leaves the source's directory"),
    "include-built-at-runtime": ("{% include '/etc/' ~ 'passwd' %}", "'/etc/passwd' is an absolute path"),
    "include-one-of": ("{% include ['data.inc', '/etc/hosts'] %}", "'/etc/hosts' is an absolute path"),
    "include-symlink-out": ("{% include 'link.inc' %}", "'link.inc' resolves outside the source's directory"),
    # the checkout's own git files (the fetch URL, the run's token, the render cache)
    "include-git": ("{% include '.git/config' %}", "'.git/config' is in a .git directory"),
    "include-git-deeper": ("{% include 'sub/.GIT/FETCH_HEAD' %}", "'sub/.GIT/FETCH_HEAD' is in a .git directory"),
    "include-git-link": ("{% include 'gitlink.inc' %}", "'gitlink.inc' resolves into a .git directory"),
    "import-absolute": ("{% import '/etc/passwd' as p %}", "'/etc/passwd' is an absolute path"),
    "from-import-parent": ("{% from '../../outside.txt' import x %}", "leaves the source's directory"),
    "extends-parent": ("{% extends '../../outside.txt' %}", "leaves the source's directory"),
    # sizes
    "repeat": ("{{ 'x' * 100000000 }}", "larger than the template's output may be"),
    "power": ("{{ 9 ** 999999 }}", "too large a number"),
    "width": ("{{ name | center(100000000) }}", "a width or count over 10000"),
    "format-width": ("{{ '%99999999d' % 1 }}", "asks for a width over 10000"),
    "doubling": ("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                 "larger than the template's output may be"),
}


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_every_escape_is_refused_naming_the_line_and_what(source, case):
    template, named = ESCAPES[case]
    err = refusal(source, "apiVersion: v1\n" + template + "\n", {"secret": SECRET})
    assert err.problem.startswith("template refused: "), err.problem
    assert named in err.problem, err.problem
    assert err.line == 2, (err.line, err.problem)
    assert "trusted: true" in err.problem  # and how a repository of the job's author gets full templating
    assert SECRET not in err.problem


def test_a_refusal_in_an_included_file_names_it_and_its_line(source):
    err = refusal(source, "a: 1\nb: 2\n{% include 'bad.inc' %}\n")
    assert err.line == 3 and "(in the included file bad.inc, line 2)" in err.problem and "'lookup'" in err.problem


def test_nothing_the_template_may_not_use_runs_before_the_refusal(source, tmp_path):
    marker = tmp_path / "pwned"
    with pytest.raises(S.TemplateFailure):
        render(source, "{{ lookup('pipe', 'touch " + str(marker) + "') }}")
    assert not marker.exists()


def test_a_name_the_source_gives_is_its_own(source):
    # a source's vars may hold a key called q or vars: then it is a value, not Ansible's
    assert render(source, "{{ q }}-{{ vars.a }}", {"q": "x", "vars": {"a": 1}}) == "x-1"
    assert render(source, "{% set lookup = 'mine' %}{{ lookup }}") == "mine"


def test_undefined_names_say_what_a_sandboxed_template_gets(source):
    err = refusal(source, "a: 1\nname: {{ app_name }}\n")
    assert err.line == 2 and err.problem.startswith("template error: 'app_name' is undefined")
    assert "only its source's vars and inventory_hostname" in err.problem


@pytest.mark.parametrize("expression", ["app_name | to_json", "app_name | b64encode", "{'a': 1} | combine(app_name)"])
def test_an_undefined_value_given_to_a_filter_fails_as_undefined(source, expression):
    err = refusal(source, "a: 1\nname: {{ " + expression + " }}\n")
    assert err.line == 2 and err.problem.startswith("template error: 'app_name' is undefined"), err.problem


# ------------------------------------------------------------------------------------------
# What templates may do
# ------------------------------------------------------------------------------------------

ALLOWED = """\
name: {{ name }}
labels: {{ labels | to_json }}
{{ labels | to_nice_yaml(indent=2) | indent(2, true) }}
b64: {{ name | b64encode }} {{ 'd2Vi' | b64decode }}
default: {{ missing | default('none') }} {{ none_value | default('x', true) }}
regex: {{ name | regex_replace('^w', 'W') }} {{ 'a1b22' | regex_findall('[0-9]+') | join(',') }}
combined: {{ labels | combine({'tier': 'front'}) | dict2items | map(attribute='key') | sort | join(',') }}
flat: {{ [[1, [2]], 3] | flatten | join(',') }} {{ [1, 2] | union([2, 3]) | join(',') }}
hash: {{ name | hash('sha256') }} {{ name | to_uuid }}
ternary: {{ (replicas > 2) | ternary('many', 'few') }} {{ 'yes' | bool }}
version: {{ '1.29.3' is version('1.28', '>=') }} {{ name is match('w') }}
{% for k, v in labels | dictsort %}
{{ loop.index }}-{{ k }}={{ v }}
{% endfor %}
{% include 'data.inc' %}

{% import 'macros.j2' as m %}{{ m.label('team', labels.team) }}
path: {{ 'a/b.yaml' | basename }} {{ ['a', 'b'] | path_join }}
none: "{{ none_value }}" {{ labels.team }} {{ labels['app'] }} {{ replicas + 1 }} {{ '%s-%d' % (name, replicas) }}
"""


def test_what_templates_use_renders(source):
    out = render(source, ALLOWED, {"labels": {"team": "a", "app": "web"}, "replicas": 3, "none_value": None})
    assert "name: web\nlabels: {\"team\": \"a\", \"app\": \"web\"}\n" in out
    assert "b64: d2Vi web\n" in out and "regex: Web 1,22\n" in out and "combined: app,team,tier\n" in out
    assert "1-app=web\n2-team=a\n" in out and 'from_include: "WEB"\n' in out and 'team: "a"' in out
    assert "ternary: many True\n" in out and "version: True True\n" in out and "path: b.yaml a/b\n" in out


def test_sandboxed_output_is_ansible_output(source):
    """The same template with the same variables renders to the same text in the sandbox as with ansible-core's own
    templating (the trusted path), on the installed ansible-core."""
    from ansible_collections.stacksync.k8s.plugins.plugin_utils.rendering import template_hook

    from tests.unit.plugins.lookup.test_manifests import make_lookup

    variables = {"name": "web", "labels": {"team": "a", "app": "web"}, "replicas": 3, "none_value": None}
    lookup, _ = make_lookup(source, variables)
    trusted = template_hook(lookup._templar, variables, {}, str(source))(ALLOWED, str(source / "cm.yaml.j2"))
    assert render(source, ALLOWED, variables) == trusted


def test_output_is_bounded(source):
    assert len(render(source, "{% for i in range(100) %}0123456789{% endfor %}", max_output=1000)) == 1000
    err = refusal(source, "{% for i in range(101) %}0123456789{% endfor %}", max_output=1000)
    assert "output is over the 1000 character limit (max_file_size)" in err.problem


#: templates of a few dozen bytes that would build values of gigabytes (each refused before it is built)
HUGE = {
    "str.ljust": "{{ 'x'.ljust(10**10) }}", "str.rjust": "{{ 'x'.rjust(10**10) }}", "str.zfill": "{{ 'x'.zfill(10**10) }}",
    "str.center": "{{ 'x'.center(10**10) }}", "str.expandtabs": "{{ ('\t' * 1000).expandtabs(10**8) }}",
    "int.to_bytes": "{{ (1).to_bytes(10**10, 'big') }}", "str.replace": "{{ ('x' * 1000).replace('x', 'y' * 1000) }}",
    "str.join": "{{ ''.join(['x' * 1000] * 1000) }}", "join": "{{ (['x' * 1000] * 1000) | join }}",
    "join attribute": "{{ ([{'a': 'x' * 1000}] * 1000) | join(attribute='a') }}",
    "replace": "{{ ('x' * 1000) | replace('x', 'y' * 1000) }}", "indent": "{{ ('\n' * 10000) | indent(1000) }}",
    "sum": "{{ ([['x'] * 1000] * 1000) | sum(start=[]) | length }}", "flatten": "{{ ([['x'] * 1000] * 1000) | flatten | length }}",
    "regex_replace": "{{ ('x' * 1000) | regex_replace('', 'y' * 1000) }}",
    "regex_replace group": "{{ ('x' * 1000) | regex_replace('(x+)', '\\\\1' * 200) }}",
}


@pytest.mark.parametrize("case", sorted(HUGE))
def test_what_would_build_a_huge_value_is_refused_before_it_is_built(source, case):
    err = refusal(source, HUGE[case], max_output=100000)
    assert "would build a value larger than the template's output may be (100000 characters)" in err.problem, err.problem


def test_serialising_filters_take_a_bounded_indentation(source):
    assert "an indentation over 64" in refusal(source, "{{ {'a': {'b': 1}} | to_nice_json(indent=100000) }}").problem
    assert "an indentation over 64" in refusal(source, "{{ {'a': 1} | to_yaml(indent=65) }}").problem
    assert render(source, "{{ {'a': 1} | to_nice_json(2) }}") == '{\n  "a": 1\n}'


def test_the_same_calls_within_bounds_render(source):
    text = ("{{ 'a'.ljust(3) }}|{{ ['a', 'b'] | join(',') }}|{{ [{'n': 'a'}, {'n': 'b'}] | join('-', attribute='n') }}|"
            "{{ 'abc'.replace('b', 'xy') }}|{{ 'abc' | replace('b', 'z') }}|{{ 'abc' | regex_replace('(b)', '[\\\\1]') }}|"
            "{{ [[1], [2]] | sum(start=[]) }}|{{ [[1, [2]], 3] | flatten }}|{{ 'a\nb' | indent(2, true) }}|"
            "{{ '-'.join(['x', 'y']) }}|{{ '7'.zfill(3) }}|{{ ('x' * 1000) | regex_replace('(x{50})', '\\\\1' * 10) | length }}")
    assert render(source, text) == "a  |a,b|a-b|axyc|azc|a[b]c|[1, 2]|[1, 2, 3]|  a\n  b|x-y|007|10000"


def test_variables_are_plain_values():
    class Wrapped(str):  # as ansible-core 2.16's unsafe text: a str whose str() is itself
        def __str__(self):
            return self

    class Mapping:  # something dict-like that is not a dict (as Ansible's lazy containers are)
        def items(self):
            return [("k", Wrapped("v"))]

    plain = S.plain_variables({"a": Wrapped("x"), "m": Mapping(), "l": (1, 2.5, True, None)})
    assert plain == {"a": "x", "m": {"k": "v"}, "l": [1, 2.5, True, None]}
    assert type(plain["a"]) is str and type(plain["m"]["k"]) is str


def test_the_allowed_filters_and_tests_are_an_allow_list():
    """Every filter and test of the sandbox is one of Jinja2's own or one written for it, never Ansible's plugins
    (their from_yaml builds vault values that decrypt with the job's secrets)."""
    from jinja2.defaults import DEFAULT_FILTERS, DEFAULT_TESTS

    for name, function in F.allowed_filters().items():
        bare = name[len("ansible.builtin."):] if name.startswith("ansible.builtin.") else name
        assert function is DEFAULT_FILTERS.get(bare) or getattr(function, "wrapped", function) is F.ANSIBLE_FILTERS.get(
            bare), name
    for name, function in F.allowed_tests().items():
        bare = name[len("ansible.builtin."):] if name.startswith("ansible.builtin.") else name
        assert function is DEFAULT_TESTS.get(bare) or function is F.ANSIBLE_TESTS.get(bare), name
    for refused in ("from_yaml", "from_yaml_all", "fileglob", "random", "shuffle", "vault", "unvault", "expanduser",
                    "expandvars", "realpath", "relpath", "password_hash", "strftime", "pow", "product"):
        assert refused not in F.allowed_filters()
