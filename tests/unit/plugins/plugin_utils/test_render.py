"""Unit tests for plugins/plugin_utils/render.py (the logic behind the manifests lookup).

Real files in tmp_path, real ansible-vault encryption, real kubectl kustomize and real git repos.
"""

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import jinja2
import pytest
import yaml
from ansible.errors import AnsibleError
from ansible.parsing.vault import VaultLib, VaultSecret
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import SOURCE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import validation
from ansible_collections.stacksync.k8s.plugins.plugin_utils import render as R
from ansible_collections.stacksync.k8s.plugins.plugin_utils import render_common, render_files, render_kustomize
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import render

from tests.conftest import REPO
from tests.tools.render_bench import write_repo
from tests.unit.plugins.module_utils.engine.test_validation import BAD_MANIFESTS

FIXTURES = REPO / "tests" / "fixtures" / "render"
HAVE_KUSTOMIZE = render_kustomize.default_kustomize_command() is not None
needs_kustomize = pytest.mark.skipif(not HAVE_KUSTOMIZE, reason="neither kustomize nor kubectl on PATH")

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"


def write(root, files):
    """Create ``{relpath: text-or-bytes}`` under ``root``."""
    for rel, content in files.items():
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content), encoding="utf-8")
    return Path(root)


def names(manifests):
    return [m["metadata"]["name"] for m in manifests]


def sources(manifests):
    return [m["metadata"]["annotations"][SOURCE_ANNOTATION] for m in manifests]


def render_error(path, **kwargs):
    with pytest.raises(R.RenderError) as info:
        R.render(str(path), **kwargs)
    assert isinstance(info.value, AnsibleError)
    return info.value


VAULT_SECRET = VaultSecret(b"correct horse")
VAULT = VaultLib([("default", VAULT_SECRET)])


def vault_encrypt(text):
    return VAULT.encrypt(text.encode("utf-8"), VAULT_SECRET)


def jinja_hook(variables):
    def template(text, path):
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
        return env.from_string(text).render(**variables)
    return template


# ------------------------------------------------------------------------------------------
# Files, documents, order
# ------------------------------------------------------------------------------------------

@needs_kustomize
def test_fixture_tree_renders_in_sorted_order_with_sources():
    manifests = R.render(str(FIXTURES / "basic"))
    assert [(m["kind"], m["metadata"]["name"]) for m in manifests] == [
        ("ConfigMap", "one"),
        ("ConfigMap", "two"),
        ("Deployment", "web"),
        ("Service", "web"),
        ("ConfigMap", "k-settings"),
        ("Namespace", "demo"),
    ]
    assert sources(manifests) == [
        "apps/list.json#0", "apps/list.json#0", "apps/web/deployment.yml#0", "apps/web/service.yml#0",
        "kust#0", "namespace.yaml#0",
    ]
    json.dumps(manifests)  # plain, serialisable data


def test_multi_document_yaml_skips_empty_documents_and_counts_them(tmp_path):
    write(tmp_path, {"a.yaml": "---\n" + CM.format(name="a") + "---\n---\n# only a comment\n---\n" + CM.format(name="b")})
    manifests = R.render(str(tmp_path))
    assert names(manifests) == ["a", "b"]
    assert sources(manifests) == ["a.yaml#0", "a.yaml#3"]


def test_files_and_directories_sorted_by_path(tmp_path):
    write(tmp_path, {
        "b.yaml": CM.format(name="b"), "a/z.yml": CM.format(name="az"), "a.yaml": CM.format(name="a"),
        "c.json": json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    })
    first = R.render(str(tmp_path))
    assert names(first) == ["a", "az", "b", "c"]
    assert R.render(str(tmp_path)) == first


def test_list_kinds_are_flattened(tmp_path):
    write(tmp_path, {"l.yaml": """\
        apiVersion: v1
        kind: ConfigMapList
        items:
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
          - {apiVersion: v1, kind: Secret, metadata: {name: b}}
        """})
    manifests = R.render(str(tmp_path))
    assert [(m["kind"], m["metadata"]["name"]) for m in manifests] == [("ConfigMap", "a"), ("Secret", "b")]


def test_hidden_and_non_manifest_files_are_ignored(tmp_path):
    write(tmp_path, {
        ".git/config.yaml": CM.format(name="git"), ".github/ci.yml": "on: push\n", ".x.yaml": CM.format(name="x"),
        "README.md": "# hi\n", "script.sh": "echo\n", "values.txt": ":::\n", "ok.yaml": CM.format(name="ok"),
        "Chart.lock": "x",
    })
    assert names(R.render(str(tmp_path))) == ["ok"]


def test_source_annotation_keeps_existing_annotations_and_can_be_disabled(tmp_path):
    write(tmp_path, {"a.yaml": CM.format(name="a") + "  annotations: {keep: me}\n"})
    stamped = R.render(str(tmp_path))[0]
    assert stamped["metadata"]["annotations"] == {"keep": "me", SOURCE_ANNOTATION: "a.yaml#0"}
    plain = R.render(str(tmp_path), source_annotation=False)[0]
    assert plain["metadata"] == {"name": "a", "annotations": {"keep": "me"}}


def test_single_file_path(tmp_path):
    write(tmp_path, {"one.yaml": CM.format(name="one")})
    manifests = R.render(str(tmp_path / "one.yaml"))
    assert names(manifests) == ["one"] and sources(manifests) == ["one.yaml#0"]


def test_values_are_json_compatible(tmp_path):
    write(tmp_path, {"a.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a, annotations: {built: "2024-01-01"}}
        data:
          date: 2024-01-01
          stamp: 2024-01-01T10:00:00Z
          2: two
          true: yes-key
        binaryData:
          blob: !!binary |
            aGVsbG8=
        """})
    doc = R.render(str(tmp_path), source_annotation=False)[0]
    assert doc["data"] == {"date": "2024-01-01", "stamp": "2024-01-01T10:00:00Z", "2": "two", "true": "yes-key"}
    assert doc["binaryData"] == {"blob": "hello"}  # kubectl decodes !!binary (the API server then wants base64)
    assert json.loads(json.dumps(doc)) == doc


def test_shared_anchors_are_not_mutated(tmp_path):
    write(tmp_path, {"a.yaml": """\
        apiVersion: v1
        kind: List
        items:
          - {apiVersion: v1, kind: ConfigMap, metadata: &m {name: a, annotations: {x: "1"}}}
          - {apiVersion: v1, kind: Secret, metadata: *m}
        """})
    a, b = R.render(str(tmp_path))
    assert a["metadata"]["annotations"][SOURCE_ANNOTATION] == "a.yaml#0"
    assert b["metadata"]["name"] == "a"


# ------------------------------------------------------------------------------------------
# include / exclude / recursive
# ------------------------------------------------------------------------------------------

@pytest.fixture
def tree(tmp_path):
    return write(tmp_path, {
        "apps/web.yaml": CM.format(name="web"),
        "apps/legacy/old.yaml": CM.format(name="old"),
        "apps/db/db.yml": CM.format(name="db"),
        "infra/ns.yaml": CM.format(name="ns"),
        "top.yaml": CM.format(name="top"),
    })


@pytest.mark.parametrize("include, exclude, expected", [
    ([], [], ["db", "old", "web", "ns", "top"]),
    (["apps"], [], ["db", "old", "web"]),
    (["apps/**"], ["apps/legacy"], ["db", "web"]),
    (["**/*.yml"], [], ["db"]),
    (["*.yaml"], [], ["top"]),
    (["apps/*.yaml"], [], ["web"]),
    (["./infra/"], [], ["ns"]),
    ([], ["apps", "top.yaml"], ["ns"]),
    ([], ["**/old.yaml"], ["db", "web", "ns", "top"]),
    (["apps/[dw]*"], [], ["db", "web"]),
    (["apps/we?.yaml"], [], ["web"]),
])
def test_include_exclude_globs(tree, include, exclude, expected):
    assert names(R.render(str(tree), include=include, exclude=exclude)) == expected


def test_include_and_exclude_accept_a_string(tree):
    assert names(R.render(str(tree), include="infra", exclude="nothing")) == ["ns"]


def test_non_recursive(tree):
    assert names(R.render(str(tree), recursive=False)) == ["top"]


def test_excluded_files_are_not_even_read(tree):
    (tree / "apps" / "legacy" / "broken.yaml").write_text("key: [unclosed\n")
    assert names(R.render(str(tree), exclude=["apps/legacy"])) == ["db", "web", "ns", "top"]


# ------------------------------------------------------------------------------------------
# Symlinks and the checkout root
# ------------------------------------------------------------------------------------------

def test_symlinks_inside_the_root_are_followed(tmp_path):
    write(tmp_path, {"shared/cm.yaml": CM.format(name="shared"), "prod/own.yaml": CM.format(name="own")})
    os.symlink("../shared/cm.yaml", tmp_path / "prod" / "linked.yaml")
    os.symlink("../shared", tmp_path / "prod" / "dir")
    # File link only (a dir link to the same tree would define the object twice).
    manifests = R.render(str(tmp_path / "prod"), root=str(tmp_path), exclude=["dir"])
    assert names(manifests) == ["shared", "own"]
    assert sources(manifests) == ["prod/linked.yaml#0", "prod/own.yaml#0"]  # named in the repository
    assert names(R.render(str(tmp_path / "prod"), root=str(tmp_path), exclude=["linked.yaml"])) == ["shared", "own"]


def test_symlinked_file_outside_the_root_is_refused(tmp_path):
    write(tmp_path, {"outside/secret.yaml": CM.format(name="x"), "repo/ok.yaml": CM.format(name="ok")})
    os.symlink(str(tmp_path / "outside" / "secret.yaml"), tmp_path / "repo" / "evil.yaml")
    err = render_error(tmp_path / "repo")
    assert "evil.yaml" in str(err) and "outside the checkout" in str(err)


def test_symlinked_directory_outside_the_root_is_refused(tmp_path):
    write(tmp_path, {"outside/secret.yaml": CM.format(name="x"), "repo/ok.yaml": CM.format(name="ok")})
    os.symlink(str(tmp_path / "outside"), tmp_path / "repo" / "etc")
    err = render_error(tmp_path / "repo")
    assert "etc" in str(err) and "outside the checkout" in str(err)


def test_path_escaping_the_root_with_dotdot_is_refused(tmp_path):
    write(tmp_path, {"repo/ok.yaml": CM.format(name="ok"), "other/x.yaml": CM.format(name="x")})
    err = render_error(str(tmp_path / "repo" / ".." / "other"), root=str(tmp_path / "repo"))
    assert "outside the checkout" in str(err)


def test_irrelevant_symlinks_outside_are_ignored_and_loops_terminate(tmp_path):
    write(tmp_path, {"repo/ok.yaml": CM.format(name="ok"), "LICENSE": "text"})
    os.symlink(str(tmp_path / "LICENSE"), tmp_path / "repo" / "LICENSE")
    os.symlink(".", tmp_path / "repo" / "loop")
    assert names(R.render(str(tmp_path / "repo"))) == ["ok"]


def test_broken_symlink_to_a_manifest_is_an_error(tmp_path):
    write(tmp_path, {"repo/ok.yaml": CM.format(name="ok")})
    os.symlink("missing.yaml", tmp_path / "repo" / "gone.yaml")
    err = render_error(tmp_path / "repo")
    assert "gone.yaml" in str(err) and "broken symlink" in str(err)


def test_missing_path(tmp_path):
    assert "does not exist" in str(render_error(tmp_path / "nope"))


# ------------------------------------------------------------------------------------------
# Bad input: one error each, naming the file (and document / line)
# ------------------------------------------------------------------------------------------

def test_invalid_yaml_names_file_document_and_line(tmp_path):
    write(tmp_path, {"good.yaml": CM.format(name="ok"), "bad.yaml": CM.format(name="a") + "---\nkey: [unclosed\nother: 1\n"})
    err = render_error(tmp_path)
    assert str(err).startswith("bad.yaml (document 1, line ")
    assert err.path == "bad.yaml" and err.doc == 1 and err.line in (6, 7)
    assert "invalid YAML" in str(err)


def test_invalid_json(tmp_path):
    write(tmp_path, {"bad.json": '{"apiVersion": "v1",\n "kind": }'})
    err = render_error(tmp_path)
    assert err.path == "bad.json" and err.line == 2 and "invalid JSON" in str(err)


@pytest.mark.parametrize("body, problem", [
    ("- just\n- a list\n", "not a mapping (got list)"),
    ("just a string\n", "not a mapping (got string)"),
    ("kind: ConfigMap\nmetadata: {name: a}\n", "missing apiVersion"),
    ("apiVersion: v1\nmetadata: {name: a}\n", "missing kind"),
    ("replicaCount: 1\nimage: {tag: v1}\n",
     "not a Kubernetes object (no apiVersion and no kind): leave out what is not a manifest (the manifests lookup's "
     "option exclude)"),
    ("apiVersion: 1\nkind: ConfigMap\nmetadata: {name: a}\n", "apiVersion must be a string"),
    ("apiVersion: v1\nkind: ConfigMap\n", "missing metadata.name"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: x}\n", "missing metadata.name"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ''}\n", "missing metadata.name"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: [a]\n", "metadata must be a mapping"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: a-}\n", "generateName is not allowed"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 42}\n", "metadata.name must be a string, got integer 42"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: 7}\n", "metadata.namespace must be a string"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {x: true}}\n", "metadata.labels[x] must be a string, got boolean True"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {note: 1}}\n", "metadata.annotations[note] must be"),
])
def test_invalid_documents(tmp_path, body, problem):
    write(tmp_path, {"dir/f.yaml": CM.format(name="first") + "---\n" + body})
    err = render_error(tmp_path)
    assert err.path == "dir/f.yaml" and err.doc == 1 and err.line == 6
    assert problem in str(err)
    assert str(err).startswith("dir/f.yaml (document 1, line 6): ")


@pytest.mark.parametrize("manifest, problem", [case for case in BAD_MANIFESTS if not validation.is_list_kind(case[0])])
def test_the_lookup_refuses_what_the_module_refuses_with_the_same_problem(tmp_path, manifest, problem):
    """One validator (issue 15): the render side adds the file and document, the problem is the module's."""
    write(tmp_path, {"dir/f.yaml": CM.format(name="first") + "---\n" + json.dumps(manifest) + "\n"})
    err = render_error(tmp_path)
    assert (err.path, err.doc, err.line) == ("dir/f.yaml", 1, 6)
    assert err.problem == validation.manifest_problem(manifest) and problem in err.problem


def test_a_list_inside_a_list_is_refused(tmp_path):
    inner = {"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]}
    write(tmp_path, {"l.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": [inner]})})
    assert str(render_error(tmp_path)).startswith("l.json (document 0, item 0, line 1): List objects are not supported")


def test_invalid_list_item_names_the_item(tmp_path):
    write(tmp_path, {"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {kind: X}\n"})
    err = render_error(tmp_path)
    assert str(err) == "l.yaml (document 0, item 1, line 1): missing apiVersion"


def test_duplicate_in_one_file(tmp_path):
    write(tmp_path, {"a.yaml": CM.format(name="x") + "---\n" + CM.format(name="x")})
    err = render_error(tmp_path)
    assert "ConfigMap x is defined twice (first in a.yaml#0)" in str(err) and err.path == "a.yaml" and err.doc == 1


def test_duplicate_across_files_same_group_other_version(tmp_path):
    dep = "apiVersion: apps/{v}\nkind: Deployment\nmetadata: {{name: web, namespace: prod}}\n"
    write(tmp_path, {"a.yaml": dep.format(v="v1"), "b/b.yaml": CM.format(name="x") + "---\n" + dep.format(v="v1beta2")})
    err = render_error(tmp_path)
    assert str(err) == "b/b.yaml (document 1, line 6): Deployment.apps prod/web is defined twice (first in a.yaml#0)"


def test_same_name_in_other_namespace_kind_or_group_is_fine(tmp_path):
    # The leading --- makes it YAML for kubectl too (a file starting with "{" is a JSON stream).
    write(tmp_path, {"a.yaml": """\
        ---
        {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
        ---
        {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: other}}
        ---
        {apiVersion: v1, kind: Secret, metadata: {name: x}}
        ---
        {apiVersion: example.com/v1, kind: ConfigMap, metadata: {name: x}}
        """})
    assert len(R.render(str(tmp_path))) == 4


def test_duplicate_across_calls_with_shared_seen(tmp_path):
    write(tmp_path, {"one/a.yaml": CM.format(name="x"), "two/b.yaml": CM.format(name="x")})
    seen = {}
    R.render(str(tmp_path / "one"), seen=seen, origin="one/")
    err = render_error(tmp_path / "two", seen=seen, origin="two/")
    assert "defined twice (first in one/a.yaml#0)" in str(err)


def test_file_over_the_size_limit(tmp_path):
    write(tmp_path, {"big.yaml": CM.format(name="big") + "data:\n  x: '" + "a" * 2000 + "'\n"})
    err = render_error(tmp_path, max_file_size=1000)
    assert err.path == "big.yaml" and "over the 1000 byte limit" in str(err)
    assert names(R.render(str(tmp_path), max_file_size=0)) == ["big"]


def test_bytes_that_are_not_utf8(tmp_path):
    write(tmp_path, {"latin1.yaml": (CM.format(name="x") + "data:\n  x: caf\xe9\n").encode("latin-1")})
    err = render_error(tmp_path)
    assert err.path == "latin1.yaml" and err.line == 6 and "not UTF-8" in str(err)


def test_utf8_bom_is_accepted(tmp_path):
    write(tmp_path, {"bom.yaml": b"\xef\xbb\xbf" + CM.format(name="bom").encode()})
    assert names(R.render(str(tmp_path))) == ["bom"]


# ------------------------------------------------------------------------------------------
# Vault
# ------------------------------------------------------------------------------------------

def test_vault_encrypted_file_and_inline_values(tmp_path):
    secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: whole}\nstringData: {pw: hunter2}\n"
    inline = vault_encrypt("inline-pw").decode()
    write(tmp_path, {
        "whole.yaml": vault_encrypt(secret),
        "inline.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: inline}\nstringData:\n  pw: !vault |\n"
                       + textwrap.indent(inline, "    ") + "\n",
    })
    manifests = R.render(str(tmp_path), decrypt=VAULT.decrypt)
    assert [(m["metadata"]["name"], m["stringData"]["pw"]) for m in manifests] == [
        ("inline", "inline-pw"), ("whole", "hunter2")]
    assert all(type(m["stringData"]["pw"]) is str for m in manifests)


def test_undecryptable_vault_file(tmp_path):
    other = VaultSecret(b"wrong")
    write(tmp_path, {"ok.yaml": CM.format(name="ok"), "s.yaml": VaultLib().encrypt(b"x: 1\n", other)})
    err = render_error(tmp_path, decrypt=VAULT.decrypt)
    assert err.path == "s.yaml" and "cannot decrypt" in str(err)


def test_vault_file_without_secrets(tmp_path):
    write(tmp_path, {"s.yaml": vault_encrypt("x: 1\n")})
    err = render_error(tmp_path)
    assert err.path == "s.yaml" and "no vault secrets" in str(err)


def test_undecryptable_inline_vault_value(tmp_path):
    bad = VaultLib().encrypt(b"pw", VaultSecret(b"wrong")).decode()
    write(tmp_path, {"s.yaml": CM.format(name="first") + "---\n" + CM.format(name="s") + "data:\n  pw: !vault |\n"
                     + textwrap.indent(bad, "    ") + "\n"})
    err = render_error(tmp_path, decrypt=VAULT.decrypt)
    assert err.path == "s.yaml" and err.doc == 1 and "cannot decrypt a !vault value" in str(err)
    err = render_error(tmp_path)
    assert err.path == "s.yaml" and "no vault secrets" in str(err)


# ------------------------------------------------------------------------------------------
# Templates
# ------------------------------------------------------------------------------------------

def test_templates_are_rendered(tmp_path):
    write(tmp_path, {
        "cm.yaml.j2": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\ndata:\n"
                      "{% for k in keys %}  {{ k }}: \"{{ loop.index }}\"\n{% endfor %}",
        "ns.json.j2": '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "{{ name }}-ns"}}',
        "notes.txt.j2": "ignored {{ undefined }}",
    })
    manifests = R.render(str(tmp_path), template=jinja_hook({"name": "app", "keys": ["a", "b"]}))
    assert manifests[0]["data"] == {"a": "1", "b": "2"}
    assert names(manifests) == ["app", "app-ns"]
    assert sources(manifests) == ["cm.yaml.j2#0", "ns.json.j2#0"]


def test_vault_encrypted_template(tmp_path):
    write(tmp_path, {"s.yaml.j2": vault_encrypt(CM.format(name="{{ name }}"))})
    assert names(R.render(str(tmp_path), decrypt=VAULT.decrypt, template=jinja_hook({"name": "v"}))) == ["v"]


def test_template_error_names_the_file(tmp_path):
    write(tmp_path, {"t/cm.yaml.j2": CM.format(name="{{ missing_var }}")})
    err = render_error(tmp_path, template=jinja_hook({}))
    assert err.path == "t/cm.yaml.j2" and "template error" in str(err) and "missing_var" in str(err)


def test_template_rendering_to_invalid_yaml(tmp_path):
    write(tmp_path, {"cm.yaml.j2": CM.format(name="{{ name }}")})
    err = render_error(tmp_path, template=jinja_hook({"name": "[oops"}))
    assert err.path == "cm.yaml.j2" and "invalid YAML" in str(err)


def test_template_without_engine(tmp_path):
    write(tmp_path, {"cm.yaml.j2": CM.format(name="x")})
    assert "no templating engine" in str(render_error(tmp_path))


# ------------------------------------------------------------------------------------------
# kustomize
# ------------------------------------------------------------------------------------------

@needs_kustomize
def test_kustomization_directory_is_rendered_not_read_file_by_file(tmp_path):
    write(tmp_path, {
        "plain.yaml": CM.format(name="plain"),
        "overlay/kustomization.yaml": "resources: [cm.yaml, sub]\nnamePrefix: k-\n",
        "overlay/cm.yaml": CM.format(name="one"),
        "overlay/sub/kustomization.yaml": "resources: [cm.yaml]\n",
        "overlay/sub/cm.yaml": CM.format(name="two"),
        "overlay/unused.yaml": "not: [valid",  # not referenced, never read
    })
    manifests = R.render(str(tmp_path))
    assert names(manifests) == ["k-one", "k-two", "plain"]
    assert sources(manifests) == ["overlay#0", "overlay#1", "plain.yaml#0"]


@needs_kustomize
def test_kustomization_at_the_root(tmp_path):
    write(tmp_path, {"Kustomization": "resources: [cm.yaml]\n", "cm.yaml": CM.format(name="x")})
    assert names(R.render(str(tmp_path))) == ["x"]


COMPONENT = "apiVersion: kustomize.config.k8s.io/v1alpha1{eol}kind: Component  # notation{eol}patches:{eol}- path: patch.yaml{eol}"


@needs_kustomize
@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_kustomize_component_is_rendered_by_the_kustomizations_that_list_it_not_on_its_own(tmp_path, eol):
    # kustomize's components example: on its own, the component's patch has nothing to patch
    write(tmp_path, {
        "app/kustomization.yaml": "resources: [cm.yaml]\ncomponents: [../components/extra]\n",
        "app/cm.yaml": CM.format(name="x"),
        "components/extra/kustomization.yaml": COMPONENT.format(eol=eol),
        "components/extra/patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {extra: 'yes'}\n",
    })
    manifests = R.render(str(tmp_path))
    assert names(manifests) == ["x"] and manifests[0]["data"]["extra"] == "yes"
    assert sources(manifests) == ["app#0"]
    # named itself, a component is built like any kustomization (and fails as kustomize says)
    err = render_error(tmp_path / "components" / "extra")
    assert err.path == "./" and "no resource matches" in str(err)


@needs_kustomize
def test_kustomize_failure_names_the_directory_and_shows_stderr(tmp_path):
    write(tmp_path, {"ok.yaml": CM.format(name="ok"), "apps/bad/kustomization.yaml": "resources: [missing.yaml]\n"})
    err = render_error(tmp_path)
    assert err.path == "apps/bad/" and "kustomize failed" in str(err) and "missing.yaml" in str(err)


@needs_kustomize
def test_kustomize_output_is_validated(tmp_path):
    write(tmp_path, {"k/kustomization.yaml": "resources: [a.yaml, b.yaml]\n",
                     "k/a.yaml": CM.format(name="x"), "plain.yaml": CM.format(name="x"),
                     "k/b.yaml": CM.format(name="y")})
    err = render_error(tmp_path)
    assert "ConfigMap x is defined twice (first in k#0)" in str(err) and err.path == "plain.yaml"


def test_kustomize_command_override_and_include(tmp_path):
    write(tmp_path, {"k/kustomization.yaml": "resources: []\n", "other/cm.yaml": CM.format(name="o")})
    fake = tmp_path / "fake-kustomize"
    fake.write_text("#!/bin/sh\nprintf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: fake}\\n'\n")
    fake.chmod(0o755)
    assert names(R.render(str(tmp_path), kustomize=[str(fake)])) == ["fake", "o"]
    assert names(R.render(str(tmp_path), kustomize=[str(fake)], include=["k/kustomization.yaml"])) == ["fake"]
    assert names(R.render(str(tmp_path), kustomize=[str(fake)], exclude=["k"])) == ["o"]
    fake.write_text("#!/bin/sh\necho 'boom: no such thing' >&2\nexit 3\n")
    err = render_error(tmp_path, kustomize=[str(fake)])
    assert err.path == "k/" and "exited with 3" in str(err) and "boom: no such thing" in str(err)
    assert str(tmp_path) not in str(err)  # the command's name, not where it is installed


@pytest.mark.parametrize("stderr, message", [
    # kubectl kustomize: one klog line, the error quoted in err="..."
    ('E1203 14:20:16.401638   26798 run.go:72] "command failed" err="accumulating resources: '
     'accumulating resources from \'svc.yaml\': MalformedYAMLError: yaml: line 7: did not find '
     'expected \',\' in File: svc.yaml"\n',
     "accumulating resources: accumulating resources from 'svc.yaml': MalformedYAMLError: yaml: line 7: "
     "did not find expected ',' in File: svc.yaml"),
    ('E1203 14:20:16.401638   26798 run.go:72] "command failed" err="a \\"quoted\\" name"', 'a "quoted" name'),
    # the kustomize binary: "Error: ...", sometimes repeated
    ("Error: no such file: missing.yaml\nError: no such file: missing.yaml\n", "no such file: missing.yaml"),
    ("first\n\n  second  \n", "first; second"),
    ("", "no message"),
    # kustomize's warnings are not the error; paths in the checkout read relative to it
    ("# Warning: 'bases' is deprecated. Please use 'resources' instead.\n"
     "Error: accumulating resources: lstat /cache/repo-1/apps/missing.yaml: no such file or directory\n",
     "accumulating resources: lstat apps/missing.yaml: no such file or directory"),
])
def test_kustomize_message_keeps_what_went_wrong(stderr, message):
    assert render_kustomize.kustomize_message(stderr, root="/cache/repo-1") == message


# ------------------------------------------------------------------------------------------
# A real git checkout
# ------------------------------------------------------------------------------------------

def git(*args, cwd):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_render_a_clone_of_a_local_repository(tmp_path):
    work = write(tmp_path / "work", {
        "clusters/prod/app.yaml": CM.format(name="app"), "clusters/prod/.hidden/x.yaml": "junk: [",
        "clusters/shared/base.yaml": CM.format(name="base"), "README.md": "hi",
    })
    os.symlink("../shared/base.yaml", work / "clusters" / "prod" / "base.yaml")
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-qm", "init", cwd=work)
    git("clone", "-q", "--bare", str(work), str(tmp_path / "repo.git"), cwd=tmp_path)
    git("clone", "-q", "file://%s" % (tmp_path / "repo.git"), str(tmp_path / "checkout"), cwd=tmp_path)
    checkout = tmp_path / "checkout"
    manifests = R.render(str(checkout / "clusters" / "prod"), root=str(checkout))
    assert names(manifests) == ["app", "base"]
    whole = R.render(str(checkout), exclude=["clusters/shared"])  # .git ignored
    assert names(whole) == ["app", "base"] and sources(whole) == ["clusters/prod/app.yaml#0", "clusters/prod/base.yaml#0"]
    assert "defined twice" in str(render_error(checkout))  # the link and its target: one object twice
    err = render_error(checkout / "clusters" / "prod")  # root defaults to the path: link refused
    assert "base.yaml" in str(err) and "outside the checkout" in str(err)


# ------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern, path, match", [
    ("*.yaml", "a.yaml", True), ("*.yaml", "d/a.yaml", False), ("**/*.yaml", "a.yaml", True),
    ("**/*.yaml", "d/e/a.yaml", True), ("d/**", "d/e/a.yaml", True), ("[!a]*", "b", True), ("[!a]*", "a", False),
    ("a+b(c).yaml", "a+b(c).yaml", True), ("**", "x/y", True), ("[", "[", True),
])
def test_glob_to_regex(pattern, path, match):
    assert bool(R.glob_to_regex(pattern).match(path)) is match


@pytest.mark.parametrize("name, kind", [
    ("a.yaml", "yaml"), ("a.YML", "yaml"), ("a.json", "json"), ("a.yaml.j2", "template"), ("a.json.j2", "template"),
    ("a.j2", None), ("a.txt", None), (".a.yaml", None), ("kustomization", None),
])
def test_manifest_kind(name, kind):
    assert R.manifest_kind(name) == kind


def test_duplicate_keys_are_invalid_yaml(tmp_path):
    write(tmp_path, {"d.yaml": CM.format(name="a") + "data:\n  x: '1'\n  y: '2'\n  x: '3'\n"})
    err = render_error(tmp_path)
    assert err.path == "d.yaml" and err.line == 8 and "found duplicate key 'x' (first on line 6)" in str(err)
    # in a later document, both lines are the file's
    write(tmp_path, {"d.yaml": CM.format(name="z") + "---\n" + CM.format(name="a") + "data:\n  x: '1'\n  x: '3'\n"})
    err = render_error(tmp_path)
    assert err.doc == 1 and err.line == 12 and "found duplicate key 'x' (first on line 11)" in str(err)


def test_merge_keys_may_override(tmp_path):
    write(tmp_path, {"m.yaml": CM.format(name="a") + "data:\n  <<: {x: '1', z: '2'}\n  x: '3'\n"})
    assert R.render(str(tmp_path))[0]["data"] == {"x": "3", "z": "2"}


@needs_kustomize
def test_kustomization_referencing_a_directory_outside_the_root_is_refused(tmp_path):
    write(tmp_path, {
        "outside/kustomization.yaml": "resources: [cm.yaml]\n", "outside/cm.yaml": CM.format(name="stolen"),
        "repo/base/kustomization.yaml": "resources: [cm.yaml]\n", "repo/base/cm.yaml": CM.format(name="base"),
        "repo/apps/kustomization.yaml": "resources: [../base, mid]\n",
        "repo/apps/mid/kustomization.yaml": "resources:\n  - ../../../outside\n",
    })
    err = render_error(tmp_path / "repo" / "apps", root=str(tmp_path / "repo"))
    assert err.path == "apps/" and "'../../../outside' resolves outside the checkout" in str(err)  # root-relative
    # Inside the root, references to sibling directories are fine.
    (tmp_path / "repo" / "apps" / "mid" / "kustomization.yaml").write_text("resources: []\n")
    assert names(R.render(str(tmp_path / "repo" / "apps"), root=str(tmp_path / "repo"))) == ["base"]
    # Without a root, the rendered path is the bound: ../base is outside.
    assert "'../base' resolves outside the checkout" in str(render_error(tmp_path / "repo" / "apps"))


# ------------------------------------------------------------------------------------------
# Error paths relative to the root (the file's path in the repository)
# ------------------------------------------------------------------------------------------

def test_errors_name_the_path_relative_to_the_root(tmp_path):
    write(tmp_path, {"repo/clusters/base/ok.yaml": CM.format(name="ok"),
                     "repo/clusters/base/apps/bad.yaml": CM.format(name="a") + "---\nkey: [unclosed\n"})
    base = tmp_path / "repo" / "clusters" / "base"
    err = render_error(base, root=str(tmp_path / "repo"))
    assert err.path == "clusters/base/apps/bad.yaml" and err.doc == 1
    assert str(err).startswith("clusters/base/apps/bad.yaml (document 1, line ")
    assert str(tmp_path) not in str(err)
    assert render_error(base).path == "apps/bad.yaml"  # without a root: relative to the rendered path
    single = render_error(base / "apps" / "bad.yaml", root=str(tmp_path / "repo"))
    assert single.path == "clusters/base/apps/bad.yaml"


def test_duplicates_name_both_files_relative_to_the_root(tmp_path):
    write(tmp_path, {"repo/env/a.yaml": CM.format(name="x"), "repo/env/sub/b.yaml": CM.format(name="x")})
    err = render_error(tmp_path / "repo" / "env", root=str(tmp_path / "repo"))
    assert str(err) == "env/sub/b.yaml (document 0, line 1): ConfigMap x is defined twice (first in env/a.yaml#0)"
    # the source annotation names the file in the repository too (the stack module's errors quote it);
    # without a root it is relative to the rendered path
    write(tmp_path, {"repo/env/sub/b.yaml": CM.format(name="z")})
    manifests = R.render(str(tmp_path / "repo" / "env"), root=str(tmp_path / "repo"))
    assert sources(manifests) == ["env/a.yaml#0", "env/sub/b.yaml#0"]
    assert sources(R.render(str(tmp_path / "repo" / "env"))) == ["a.yaml#0", "sub/b.yaml#0"]


def test_content_after_a_document_end_marker_is_refused(tmp_path):
    # kubectl reads only up to "..." and silently drops the rest (ConfigMap b would be pruned)
    write(tmp_path, {"e.yaml": CM.format(name="a") + "...\n" + CM.format(name="b")})
    err = render_error(tmp_path)
    assert err.path == "e.yaml" and err.doc == 0 and err.line == 6  # the first line after the marker
    assert "content after a '...' document end marker" in str(err)


# ------------------------------------------------------------------------------------------
# Under a root, messages name paths in the repository (issue 17)
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("lstat /srv/cache/ab12/apps/x.yaml: no such file", "lstat apps/x.yaml: no such file"),
    ("kubectl kustomize /srv/cache/ab12/apps exited", "kubectl kustomize apps exited"),
    ("in '/srv/cache/ab12'", "in '.'"),
    ("cwd /srv/cache/ab12, then /srv/cache/ab12/", "cwd ., then "),
    ("/srv/cache/ab12-other/x and /srv/cache/ab123 and /x/srv/cache/ab12/y", None),  # other paths
    ("nothing to change", None),
])
def test_relative_text(text, expected):
    assert render_common.relative_text(text, "/srv/cache/ab12/") == (text if expected is None else expected)


def test_relative_text_leaves_everything_for_the_file_system_root():
    assert render_common.relative_text("/etc/x", "/") == "/etc/x"


def test_shown_path():
    assert R.shown_path("/srv/c/repo/apps/../base", "/srv/c/repo") == "base"
    assert R.shown_path("/srv/c/other", "/srv/c/repo") == "../other"
    assert R.shown_path("/srv/c/repo/apps", None) == "/srv/c/repo/apps"


def test_errors_under_a_root_name_no_controller_path(tmp_path):
    checkout = write(tmp_path / "cache" / "abcd", {"apps/ok.yaml": CM.format(name="ok"), "other/x.yaml": "x: [\n"})
    for path, expected in [(checkout / "apps" / "nope", "apps/nope does not exist"),
                           (checkout / "other", "other/x.yaml (document 0, line 2): invalid YAML"),  # PyYAML: line 2
                           (tmp_path, "resolves outside the checkout: refused")]:
        err = render_error(path, root=str(checkout))
        assert expected in str(err) and str(checkout) not in str(err), str(err)


@needs_kustomize
def test_kustomize_messages_under_a_root_are_repository_relative(tmp_path):
    checkout = write(tmp_path / "cache" / "abcd", {"apps/bad/kustomization.yaml": "resources: [missing.yaml]\n"})
    err = render_error(checkout / "apps", root=str(checkout))
    assert err.path == "apps/bad/" and "kustomize failed" in str(err)
    assert "apps/bad" in err.problem and str(tmp_path) not in str(err)


# ------------------------------------------------------------------------------------------
# Rendering at the scale of the acceptance fixture: 2,000 manifests across 200 files. Correctness
# only; the speed of this same fixture is measured by ``python -m tests.tools.render_bench`` (part of
# ``make bench``), not asserted by a timed test.
# ------------------------------------------------------------------------------------------

FILES = 200
DOCS_PER_FILE = 10


@pytest.mark.slow
def test_2000_manifests_in_200_files_render_completely_and_in_order(tmp_path):
    write_repo(tmp_path, FILES, DOCS_PER_FILE)
    manifests = render(str(tmp_path))
    assert len(manifests) == FILES * DOCS_PER_FILE
    names = [m["metadata"]["name"] for m in manifests]
    assert len(set(names)) == len(names)
    # Files in sorted path order (team-NN/svc-NNN), documents in file order.
    files = sorted(range(FILES), key=lambda f: (f % 20, f))
    expected = [f"app-{f}-{d}" for f in files for d in range(DOCS_PER_FILE)]
    assert names == expected
    assert all(m["kind"] == "Deployment" and m["metadata"]["namespace"].startswith("team-") for m in manifests)
    assert render(str(tmp_path)) == manifests


# ------------------------------------------------------------------------------------------
# Documents built in one walk (kubeyaml.construct_tree) render as the general constructor renders them
# ------------------------------------------------------------------------------------------

def _config_map_with(keys, anchors=False):
    data = "".join(f"  k{i}: v{i}\n" for i in range(keys))
    if anchors:
        data = data.replace("v0\n", "&v v0\n", 1)
    return CM.format(name="big") + "data:\n" + data


@pytest.mark.parametrize("anchors", [False, True])
def test_value_limit_holds_for_documents_built_in_one_walk_and_the_general_way(tmp_path, monkeypatch, anchors):
    """6 values besides the data entries (the document, apiVersion, kind, metadata, name, data)."""
    monkeypatch.setattr(render_files, "MAX_DOCUMENT_VALUES", 20)
    write(tmp_path / "ok", {"cm.yaml": _config_map_with(14, anchors)})
    assert len(render(str(tmp_path / "ok"))[0]["data"]) == 14
    write(tmp_path / "over", {"cm.yaml": _config_map_with(15, anchors)})
    err = render_error(tmp_path / "over")
    assert err.path == "cm.yaml" and err.doc == 0 and err.line == 1
    assert "expands to more than 20 values" in err.problem


def test_alias_bomb_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(render_files, "MAX_DOCUMENT_VALUES", 100)
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    write(tmp_path, {"cm.yaml": CM.format(name="bomb") + "data:\n  " + bomb.replace("\n", "\n  ") + "c: [*b, *b]\n"})
    assert "(an alias bomb?)" in render_error(tmp_path).problem


def _typed(value):
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return type(value).__name__, value


@pytest.mark.parametrize("tree", ["fixtures", "bench"])
def test_one_walk_renders_what_the_general_constructor_renders(tmp_path, monkeypatch, tree):
    if tree == "fixtures":
        path = tmp_path / "fixtures"
        shutil.copytree(FIXTURES, path)
        kwargs = dict(decrypt=VAULT.decrypt, template=jinja_hook({"replicas": 2, "env": "prod"}))
    else:
        path = tmp_path / "bench"
        write_repo(path, 20, 5)
        kwargs = {}
    fast = render(str(path), **kwargs)
    from ansible_collections.stacksync.k8s.plugins.plugin_utils import kubeyaml
    monkeypatch.setattr(kubeyaml, "_without_anchors", lambda stream: False)  # every document the general way
    assert _typed(render(str(path), **kwargs)) == _typed(fast)


# ------------------------------------------------------------------------------------------
# YAML: what anchors and aliases expand to, by size; error positions as PyYAML gives them
# ------------------------------------------------------------------------------------------

def _size_bomb(value_size, aliases, per_line=1000):
    """A ConfigMap whose data holds one ``value_size``-byte string and a list of ``aliases`` aliases of it."""
    lines = ["  - [" + ", ".join(["*b"] * min(per_line, aliases - i)) + "]" for i in range(0, aliases, per_line)]
    return (CM.format(name="bomb") + "data:\n  big: &b " + "x" * value_size + "\nlist:\n" + "\n".join(lines) + "\n")


def test_an_alias_of_a_large_string_counts_its_size_each_time_it_is_used(tmp_path):
    # 400 aliases of a 100 kB string: 40 MB, over the 32 MiB of one document (only 402 values, far below 1000000)
    write(tmp_path, {"pad.yaml": CM.format(name="pad"), "cm.yaml": CM.format(name="ok") + "---\n" + _size_bomb(100000, 400)})
    err = render_error(tmp_path)
    assert (err.path, err.doc, err.line) == ("cm.yaml", 1, 6)
    assert err.problem == ("the document expands to more than 33554432 bytes through YAML anchors and aliases (an alias "
                           "bomb?; its aliases repeat a 100002-byte part from line 11): refusing it, over the limit of "
                           "one document")
    write(tmp_path, {"cm.yaml": _size_bomb(100000, 300)})  # 30 MB: under the limit, rendered
    assert len(render(str(tmp_path), include=["cm.yaml"])[0]["list"][0]) == 300


def test_the_documents_of_a_render_share_one_expansion_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(render_files, "MAX_EXPANDED_SIZE", 3 * 1024 * 1024)
    one = _size_bomb(10000, 110)  # about 1.1 MB each
    write(tmp_path, {"a.yaml": one.replace("bomb", "a"), "b.yaml": one.replace("bomb", "b") + "---\n" + one})
    err = render_error(tmp_path)
    assert (err.path, err.doc) == ("b.yaml", 1)
    assert "the documents of this tree expand to more than 3145728 bytes in all" in err.problem
    assert "over the limit of one render" in err.problem
    # each render has its own budget: b.yaml alone (about 2 MB) renders
    assert len(render(str(tmp_path), include=["b.yaml"])) == 2


def test_an_alias_that_contains_itself_is_refused(tmp_path):
    write(tmp_path, {"r.yaml": CM.format(name="r") + "data: &d\n  self: *d\n"})
    err = render_error(tmp_path)
    assert err.problem.startswith("an alias on line 5 names a node that contains it: a recursive structure")


BOMB_SCRIPT = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (__LIMIT__, __LIMIT__))
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import RenderError, render
try:
    manifests = render(sys.argv[1])
    outcome = "rendered %d bytes" % len(json.dumps(manifests))  # what the stack module sends on
except RenderError as exc:
    outcome = "refused: " + str(exc)
except MemoryError:
    outcome = "MemoryError"
print(json.dumps({"outcome": outcome, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


@pytest.mark.parametrize("bomb", ["size", "laughs"])
def test_a_small_file_whose_aliases_expand_to_gigabytes_fails_fast_in_bounded_memory(tmp_path, bomb):
    """A 0.7 MB file whose aliases expand to 15 GB (an alias of a 100 kB string, 150000 times; the values it counts
    are far below 1000000), and a billion laughs: refused, in a process allowed 1 GiB of address space."""
    import sys

    from tests.conftest import COLLECTIONS_ROOT

    if bomb == "size":
        text = _size_bomb(100000, 150000)  # 15 GB
        assert 600000 < len(text) < 800000
    else:
        levels = ["  a: &a [" + ", ".join(["lol"] * 9) + "]"]
        levels += [f"  {c}: &{c} [" + ", ".join(["*" + p] * 9) + "]" for p, c in zip("abcdefghi", "bcdefghij")]
        text = CM.format(name="laughs") + "data: {}\nbomb:\n" + "\n".join(levels) + "\n"
    write(tmp_path, {"bomb.yaml": text})
    proc = subprocess.run([sys.executable, "-c", BOMB_SCRIPT.replace("__LIMIT__", str(1024 ** 3)), str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["outcome"].startswith("refused: bomb.yaml (document 0, line 1): the document expands to more than "), result
    assert "through YAML anchors and aliases (an alias bomb?" in result["outcome"]
    assert result["maxrss_kb"] < 400 * 1024, result  # the document was measured, never built


def test_a_yaml_error_gives_the_positions_pyyaml_gives(tmp_path):
    """An unclosed quote on line 7 of an 8-line file: PyYAML says the scalar starts on line 7 and the stream ends on
    line 9; so does the error (it said line 10: a blank line was added after the file's last one)."""
    text = CM.format(name="x") + "data:\n  a: b\n  c: \"unterminated\n  d: e\n"
    assert text.count("\n") == 8
    write(tmp_path, {"bad.yaml": text, "two.yaml": CM.format(name="first") + "---\n" + text})
    with pytest.raises(yaml.YAMLError) as info:
        yaml.safe_load(text)
    context, problem = info.value.context_mark, info.value.problem_mark
    assert (context.line + 1, context.column + 1, problem.line + 1, problem.column + 1) == (7, 6, 9, 1)
    err = render_error(tmp_path, include=["bad.yaml"])
    assert str(err) == ("bad.yaml (document 0, line 9): invalid YAML: found unexpected end of stream at line 9, column 1, "
                        "while scanning a quoted scalar that starts at line 7, column 6")
    # in a later document, the lines are the file's
    err = render_error(tmp_path, include=["two.yaml"])
    assert str(err) == ("two.yaml (document 1, line 14): invalid YAML: found unexpected end of stream at line 14, "
                        "column 1, while scanning a quoted scalar that starts at line 12, column 6")


@pytest.mark.parametrize("text", [
    "a: b: c\n",  # a mapping value where none may be: one position
    "a: [1, 2\nb: 3\n",  # a flow sequence never closed: where the parser gave up, and where the sequence starts
    "a:\n\tb: 1\n",  # a tab where indentation is expected
    "a:\n  b: 'x\n",  # a quote never closed
])
def test_yaml_errors_name_where_they_fail_and_where_the_construct_starts(tmp_path, text):
    """Whatever the parser's words (libyaml's and PyYAML's differ), the positions are the ones PyYAML marks reading
    the whole file: where it fails and, where elsewhere, where the construct it was reading starts."""
    write(tmp_path, {"e.yaml": text})
    err = str(render_error(tmp_path))
    with pytest.raises(yaml.YAMLError) as info:
        yaml.load(text, Loader=yaml.SafeLoader)
    problem, context = info.value.problem_mark, info.value.context_mark
    assert err.startswith(f"e.yaml (document 0, line {problem.line + 1}): invalid YAML: "), err
    assert f" at line {problem.line + 1}, column {problem.column + 1}" in err, err
    if context is not None and (context.line, context.column) != (problem.line, problem.column):
        assert f"that starts at line {context.line + 1}, column {context.column + 1}" in err, err


def test_a_key_written_twice_names_both_lines_and_where_the_mapping_starts(tmp_path):
    write(tmp_path, {"e.yaml": "a: 1\nb:\n  c: 1\n  c: 2\n"})
    assert str(render_error(tmp_path)) == (
        "e.yaml (document 0, line 4): invalid YAML: found duplicate key 'c' (first on line 3) at line 4, column 3, "
        "while constructing a mapping that starts at line 3, column 3")


@pytest.mark.parametrize("name, text, said", [
    # libyaml composes nodes recursively in C: ~20,000 levels overflow its stack and kill the process
    ("deep.yaml", "a: " + "[" * 30000 + "]" * 30000 + "\n", "nests flow collections ([ and {) more than 1000 levels deep"),
    ("deep.json", "{\"a\": " + "[" * 100000 + "]" * 100000 + "}", "nested too deeply"),
])
def test_a_document_nested_deeper_than_the_parser_can_go_is_an_error_naming_the_file(tmp_path, name, text, said):
    write(tmp_path, {name: text})
    err = render_error(tmp_path)
    assert err.path == name and said in str(err), str(err)
