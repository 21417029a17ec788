"""Tests for the stacksync.k8s.manifests lookup plugin.

Two ways: the plugin instantiated in-process with a real DataLoader / Templar (play variables,
vault secrets), and real ``ansible-playbook`` runs.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.parsing.vault import VaultLib, VaultSecret
from ansible.template import Templar
from ansible_collections.stacksync.k8s.plugins.lookup import manifests as lookup_module

SOURCE = "stacksync.io/source"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
PASSWORD = "correct horse"
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def write(root, files):
    for rel, content in files.items():
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content), encoding="utf-8")
    return Path(root)


def encrypt(text):
    secret = VaultSecret(PASSWORD.encode())
    return VaultLib().encrypt(text.encode(), secret)


def inline_vault(name, value, indent=2):
    body = textwrap.indent(encrypt(value).decode(), " " * (indent + 2))
    return "{}{}: !vault |\n{}\n".format(" " * indent, name, body)


# ------------------------------------------------------------------------------------------
# In-process: DataLoader + Templar
# ------------------------------------------------------------------------------------------

def make_lookup(basedir, variables=None, vault=True):
    """The lookup as Ansible loads it: options registered from DOCUMENTATION, real loader/templar."""
    options = yaml.safe_load(lookup_module.DOCUMENTATION)["options"]
    C.config.initialize_plugin_configuration_definitions("lookup", "stacksync.k8s.manifests", options)
    loader = DataLoader()
    loader.set_basedir(str(basedir))
    if vault:
        loader.set_vault_secrets([("default", VaultSecret(PASSWORD.encode()))])
    variables = dict(variables or {})
    templar = Templar(loader=loader, variables=variables)
    lookup = lookup_module.LookupModule(loader=loader, templar=templar)
    lookup._load_name = "stacksync.k8s.manifests"
    return lookup, variables


@pytest.fixture
def repo(tmp_path):
    return write(tmp_path / "repo", {
        "apps/cm.yaml.j2": """\
            apiVersion: v1
            kind: ConfigMap
            metadata:
              name: {{ app_name }}
              namespace: {{ ns | default('default') }}
            data:
              replicas: "{{ replicas * 2 }}"
              extra: "{{ extra | default('none') }}"
              path: 'C:\\dir\\n'
            {{ more_data | to_nice_yaml | indent(2, true) }}
            """,
        "apps/secret.yaml": encrypt("apiVersion: v1\nkind: Secret\nmetadata: {name: whole}\nstringData: {pw: hunter2}\n"),
        "apps/inline.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: inline}\nstringData:\n"
                            + inline_vault("token", "t0k3n"),
        "ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n",
    })


def test_lookup_in_process_templates_and_decrypts(repo):
    lookup, variables = make_lookup(repo.parent, {"app_name": "web", "replicas": 2, "more_data": {"k": "v"}})
    manifests = lookup.run(["repo"], variables, template_vars={"extra": "yes"})
    assert [m["metadata"]["name"] for m in manifests] == ["web", "inline", "whole", "demo"]
    cm, inline, whole, _ns = manifests
    assert cm["data"] == {"replicas": "4", "extra": "yes", "path": "C:\\dir\\n", "k": "v"}
    assert cm["metadata"]["namespace"] == "default"
    assert cm["metadata"]["annotations"][SOURCE] == "apps/cm.yaml.j2#0"
    assert inline["stringData"] == {"token": "t0k3n"} and whole["stringData"] == {"pw": "hunter2"}
    # Plain built-in types only: the module gets JSON.
    assert json.loads(json.dumps(manifests)) == manifests
    for value in (inline["stringData"]["token"], whole["stringData"]["pw"], cm["metadata"]["name"]):
        assert type(value) is str


def test_lookup_options(repo):
    lookup, variables = make_lookup(repo.parent, {"app_name": "web", "replicas": 1, "more_data": {}})
    manifests = lookup.run([str(repo)], variables, include=["apps/*.yaml"], exclude=["apps/secret.yaml"],
                           source_annotation=False)
    assert [m["metadata"]["name"] for m in manifests] == ["inline"]
    assert "annotations" not in manifests[0]["metadata"]
    assert [m["metadata"]["name"] for m in lookup.run([str(repo)], variables, recursive=False)] == ["demo"]


def test_lookup_duplicates_across_terms(tmp_path):
    write(tmp_path, {"a/x.yaml": CM.format(name="x"), "b/y.yaml": CM.format(name="x"), "c/z.yaml": CM.format(name="z")})
    lookup, variables = make_lookup(tmp_path)
    assert len(lookup.run(["a", "c"], variables)) == 2
    with pytest.raises(AnsibleError, match=r"ConfigMap x is defined twice \(first in .*/a/x.yaml#0\)"):
        lookup.run(["a", "b"], variables)


def test_lookup_root_refuses_escapes(tmp_path):
    write(tmp_path, {"repo/apps/x.yaml": CM.format(name="x"), "outside/y.yaml": CM.format(name="y")})
    os.symlink(str(tmp_path / "outside" / "y.yaml"), tmp_path / "repo" / "apps" / "y.yaml")
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError, match=r"y\.yaml: symlink points outside the checkout"):
        lookup.run(["repo/apps"], variables, root="repo")
    with pytest.raises(AnsibleError, match="outside the checkout"):
        lookup.run(["repo/../outside"], variables, root="repo")


def test_lookup_template_error_is_an_ansible_error_naming_the_file(tmp_path):
    write(tmp_path, {"t/cm.yaml.j2": CM.format(name="{{ nope }}")})
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError) as info:
        lookup.run(["t"], variables)
    assert "cm.yaml.j2: template error" in str(info.value) and "nope" in str(info.value)


def test_lookup_wrong_vault_password(tmp_path):
    write(tmp_path, {"s/secret.yaml": VaultLib().encrypt(b"a: 1\n", VaultSecret(b"other"))})
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError, match=r"secret\.yaml: cannot decrypt the vault-encrypted file"):
        lookup.run(["s"], variables)


def test_lookup_without_vault_secrets(tmp_path):
    write(tmp_path, {"s/secret.yaml": encrypt("a: 1\n")})
    lookup, variables = make_lookup(tmp_path, vault=False)
    with pytest.raises(AnsibleError, match=r"secret\.yaml: cannot decrypt"):
        lookup.run(["s"], variables)


# ------------------------------------------------------------------------------------------
# ansible-playbook
# ------------------------------------------------------------------------------------------

def run_playbook(tmp_path, tasks, extra_args=(), play_vars=None):
    playbook = tmp_path / "playbook.yml"
    play = [{"hosts": "localhost", "gather_facts": False, "vars": play_vars or {}, "tasks": tasks}]
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    (tmp_path / "vault-pass").write_text(PASSWORD)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default")
    return subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", "--vault-password-file", str(tmp_path / "vault-pass"),
         "-e", f"ansible_python_interpreter={sys.executable}", str(playbook), *extra_args],
        cwd=str(tmp_path), capture_output=True, text=True, env=env, timeout=300)


def test_playbook_query_and_lookup(tmp_path, repo):
    out_file = tmp_path / "out.json"
    tasks = [
        {"name": "render", "ansible.builtin.set_fact": {
            "rendered": "{{ query('stacksync.k8s.manifests', 'repo') }}",
            "as_lookup": "{{ lookup('stacksync.k8s.manifests', 'repo', exclude=['apps']) }}",
            "one": "{{ lookup('stacksync.k8s.manifests', 'repo', exclude=['apps'], wantlist=true) }}"}},
        {"name": "save", "ansible.builtin.copy": {
            "content": "{{ {'rendered': rendered, 'one': one} | to_json }}", "dest": str(out_file), "mode": "0600"}},
    ]
    result = run_playbook(tmp_path, tasks, play_vars={"app_name": "from-play", "replicas": 3,
                                                       "more_data": {"nested": "value"}})
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(out_file.read_text())
    names = [m["metadata"]["name"] for m in data["rendered"]]
    assert names == ["from-play", "inline", "whole", "demo"]
    assert data["rendered"][0]["data"] == {"replicas": "6", "extra": "none", "path": "C:\\dir\\n", "nested": "value"}
    assert data["rendered"][1]["stringData"]["token"] == "t0k3n"
    assert data["rendered"][2]["stringData"]["pw"] == "hunter2"
    assert [m["metadata"]["name"] for m in data["one"]] == ["demo"]
    assert "[WARNING]" not in result.stderr


def test_playbook_broken_repo_fails_before_anything_else(tmp_path):
    write(tmp_path, {"repo/ok.yaml": CM.format(name="ok"), "repo/sub/bad.yaml": CM.format(name="a") + "---\n- not a mapping\n"})
    marker = tmp_path / "applied"
    tasks = [
        {"name": "render", "ansible.builtin.set_fact": {"rendered": "{{ query('stacksync.k8s.manifests', 'repo') }}"}},
        {"name": "would apply", "ansible.builtin.file": {"path": str(marker), "state": "touch", "mode": "0600"}},
    ]
    result = run_playbook(tmp_path, tasks)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "sub/bad.yaml (document 1, line 6): the document is not a mapping (got list)" in output
    assert not marker.exists()


def test_playbook_template_error(tmp_path):
    write(tmp_path, {"repo/cm.yaml.j2": CM.format(name="{{ undefined_thing }}")})
    tasks = [{"name": "render", "ansible.builtin.debug": {"msg": "{{ query('stacksync.k8s.manifests', 'repo') }}"}}]
    result = run_playbook(tmp_path, tasks)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "cm.yaml.j2: template error" in output and "undefined_thing" in output


def test_playbook_template_vars_includes_filters_and_lookups(tmp_path):
    write(tmp_path, {
        "repo/apps/cm.yaml.j2": """\
            apiVersion: v1
            kind: ConfigMap
            metadata:
              name: {{ name }}
              labels: {{ labels | to_json }}
            data:
              {% include 'data.inc' %}

              host: "{{ inventory_hostname }}"
              env: "{{ lookup('ansible.builtin.env', 'STACKSYNC_TEST_ENV') }}"
            """,
        "repo/apps/data.inc": 'from_include: "{{ name | upper }}"\n',
    })
    out_file = tmp_path / "out.json"
    tasks = [
        {"name": "render", "ansible.builtin.set_fact": {
            "rendered": "{{ query('stacksync.k8s.manifests', 'repo', template_vars={'name': 'tv'}) }}"}},
        {"name": "save", "ansible.builtin.copy": {"content": "{{ rendered | to_json }}", "dest": str(out_file),
                                                  "mode": "0600"}},
    ]
    os.environ["STACKSYNC_TEST_ENV"] = "from-env"
    try:
        result = run_playbook(tmp_path, tasks, play_vars={"labels": {"team": "a"}, "name": "overridden"})
    finally:
        del os.environ["STACKSYNC_TEST_ENV"]
    assert result.returncode == 0, result.stdout + result.stderr
    [cm] = json.loads(out_file.read_text())
    assert cm["metadata"]["name"] == "tv" and cm["metadata"]["labels"] == {"team": "a"}
    assert cm["data"] == {"from_include": "TV", "host": "localhost", "env": "from-env"}


def test_lookup_error_names_the_repo_relative_file_and_the_checkout_once(tmp_path):
    checkout = tmp_path / "cache" / "0123abcd"
    write(checkout, {"clusters/base/ok.yaml": CM.format(name="ok"), "clusters/base/bad.yaml": "data: {op: [}\n"})
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError) as info:
        lookup.run([str(checkout / "clusters" / "base")], variables, root=str(checkout))
    message = str(info.value)
    assert message.startswith("stacksync.k8s.manifests: clusters/base/bad.yaml (document 0, line 1): invalid YAML")
    assert message.endswith(f"(in checkout {checkout})") and message.count(str(checkout)) == 1
    # Without a root: relative to the term, which is named once at the end.
    with pytest.raises(AnsibleError) as info:
        lookup.run([str(checkout / "clusters")], variables)
    assert str(info.value).startswith("stacksync.k8s.manifests: base/bad.yaml (document 0, line 1): ")
    assert str(info.value).endswith(f"(in {checkout / 'clusters'})")


def test_lookup_duplicates_across_terms_under_a_root_are_repo_relative(tmp_path):
    write(tmp_path, {"a/x.yaml": CM.format(name="x"), "b/y.yaml": CM.format(name="x")})
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError, match=r"^stacksync.k8s.manifests: b/y.yaml \(document 0, line 1\): "
                                           r"ConfigMap x is defined twice \(first in a/x.yaml#0\)"):
        lookup.run(["a", "b"], variables, root=str(tmp_path))
