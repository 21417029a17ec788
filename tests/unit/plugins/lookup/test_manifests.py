"""Tests for the stacksync.k8s.manifests lookup plugin.

Two ways: the plugin instantiated in-process with a real DataLoader / Templar (play variables,
vault secrets), and real ``ansible-playbook`` runs.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.parsing.vault import VaultLib, VaultSecret
from ansible.template import Templar
from ansible_collections.stacksync.k8s.plugins.lookup import manifests as lookup_module

from tests.unit.plugins.plugin_utils.test_render import write

SOURCE = "stacksync.io/source"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
PASSWORD = "correct horse"
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


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
    """A trusted repository (trusted=true): its templates get the play's variables (plus template_vars), its vault
    data every secret of the play."""
    lookup, variables = make_lookup(repo.parent, {"app_name": "web", "replicas": 2, "more_data": {"k": "v"}})
    manifests = lookup.run(["repo"], variables, template_vars={"extra": "yes"}, trusted=True)
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
                           source_annotation=False, vault_id=["default"])
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
    assert "cm.yaml.j2 (line 4): template error" in str(info.value) and "nope" in str(info.value)


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
            "rendered": "{{ query('stacksync.k8s.manifests', 'repo', trusted=true) }}",
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
    assert "cm.yaml.j2 (line 4): template error" in output and "undefined_thing" in output


def test_playbook_template_vars_includes_filters_and_lookups(tmp_path):
    """A trusted repository (trusted=true): full Ansible templating, play variables and lookups included."""
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
            "rendered": "{{ query('stacksync.k8s.manifests', 'repo', template_vars={'name': 'tv'}, trusted=true) }}"}},
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


def test_lookup_error_names_the_repo_relative_file_never_the_checkout(tmp_path):
    checkout = tmp_path / "cache" / "0123abcd"
    write(checkout, {"clusters/base/ok.yaml": CM.format(name="ok"), "clusters/base/bad.yaml": "data: {op: [}\n"})
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError) as info:
        lookup.run([str(checkout / "clusters" / "base")], variables, root=str(checkout))
    message = str(info.value)
    assert message.startswith("stacksync.k8s.manifests: clusters/base/bad.yaml (document 0, line 1): invalid YAML")
    assert str(checkout) not in message and str(tmp_path) not in message  # issue 17: the repo path, not the cache
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


# ------------------------------------------------------------------------------------------
# Errors under a root name the file in the repository, never the controller's cache (issue 17)
# ------------------------------------------------------------------------------------------

def _three_documents(third):
    return CM.format(name="zero") + "---\n" + CM.format(name="one") + "---\n" + third


WRONG_VAULT = VaultLib().encrypt(b"x", VaultSecret(b"another password")).decode()
BAD_DOCUMENT_2 = {
    "bad YAML": ("manifests/app.yaml", "data: {op: [}\n", "invalid YAML"),
    "invalid manifest": ("manifests/app.yaml", CM.format(name="two") + "  labels: {app: -bad-}\n", "invalid label value"),
    "invalid name": ("manifests/app.yaml", CM.format(name="Two_Bad"), "invalid metadata.name 'Two_Bad'"),
    "vault value": ("manifests/app.yaml", CM.format(name="two") + "data:\n  k: !vault |\n"
                    + textwrap.indent(WRONG_VAULT, "    ") + "\n", "cannot decrypt a !vault value"),
    "template output": ("manifests/app.yaml.j2", CM.format(name="{{ 'Upper' }}"), "invalid metadata.name 'Upper'"),
}


def cache_checkout(tmp_path):
    """A checkout as the source role leaves it: under the controller's cache directory."""
    return tmp_path / "home" / ".cache" / "stacksync" / "repos" / "6f1c2a9e"


@pytest.mark.parametrize("case", sorted(BAD_DOCUMENT_2))
def test_lookup_error_in_document_2_names_repo_file_and_document(tmp_path, case):
    rel, third, problem = BAD_DOCUMENT_2[case]
    checkout = write(cache_checkout(tmp_path), {rel: _three_documents(third), "manifests/ok.yaml": CM.format(name="ok")})
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError) as info:
        lookup.run([str(checkout / "manifests")], variables, root=str(checkout))
    message = str(info.value)
    assert message.startswith(f"stacksync.k8s.manifests: {rel} (document 2, line "), message
    assert problem in message
    assert str(tmp_path) not in message and ".cache" not in message


@pytest.mark.parametrize("case, files, expected", [
    ("template error", {"manifests/app.yaml.j2": _three_documents(CM.format(name="{{ no_such_var }}"))},
     ["manifests/app.yaml.j2 (line 14): template error", "no_such_var"]),
    ("vault file", {"manifests/app.yaml": VaultLib().encrypt(b"a: 1\n", VaultSecret(b"another password"))},
     ["manifests/app.yaml: cannot decrypt the vault-encrypted file"]),
    ("missing term", {}, ["manifests does not exist"]),
])
def test_lookup_file_errors_under_a_root_never_name_the_cache(tmp_path, case, files, expected):
    checkout = write(cache_checkout(tmp_path), dict(files, **{"README.md": "x"}))
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError) as info:
        lookup.run([str(checkout / "manifests")], variables, root=str(checkout))
    message = str(info.value)
    assert all(part in message for part in expected), message
    assert str(tmp_path) not in message and ".cache" not in message


needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None and shutil.which("kustomize") is None,
                                   reason="neither kustomize nor kubectl on PATH")


@needs_kubectl
def test_lookup_kustomize_errors_under_a_root_never_name_the_cache(tmp_path):
    checkout = write(cache_checkout(tmp_path), {
        "manifests/broken/kustomization.yaml": "resources: [missing.yaml]\n",
        "manifests/kust/kustomization.yaml": "resources: [app.yaml]\n",
        # kustomize sorts its output (kind, then name): this one is its document 2
        "manifests/kust/app.yaml": _three_documents(CM.format(name="zzz") + "  labels: {app: -bad-}\n"),
    })
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError) as info:
        lookup.run([str(checkout / "manifests")], variables, root=str(checkout))
    message = str(info.value)
    # kustomize's own message names the missing file by its absolute path: made repository-relative
    assert message.startswith("stacksync.k8s.manifests: manifests/broken/: kustomize failed"), message
    assert "manifests/broken" in message.split("kustomize failed", 1)[1] and "missing.yaml" in message
    assert str(tmp_path) not in message and ".cache" not in message
    with pytest.raises(AnsibleError) as info:
        lookup.run([str(checkout / "manifests" / "kust")], variables, root=str(checkout))
    message = str(info.value)
    assert message.startswith("stacksync.k8s.manifests: manifests/kust/ (document 2, line "), message
    assert "invalid label value" in message and str(tmp_path) not in message


def test_stack_src_error_names_the_repo_file_never_the_cache(tmp_path):
    """The stack module's ``src`` renders through this lookup: a broken file of a checkout in the controller's
    cache fails the task with the lookup's message, naming the file in the repository (issue 17)."""
    checkout = write(cache_checkout(tmp_path), {"manifests/ok.yaml": CM.format(name="ok"),
                                                "manifests/app.yaml": _three_documents("data: {op: [}\n")})
    tasks = [{"name": "sync", "stacksync.k8s.stack": {
        "name": "demo", "src": str(checkout / "manifests"), "render": {"root": str(checkout)},
        "kubeconfig": str(tmp_path / "never-read")}}]
    result = run_playbook(tmp_path, tasks)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert '"msg": "stacksync.k8s.manifests: manifests/app.yaml (document 2, line ' in result.stdout, output
    assert str(checkout) not in output and ".cache" not in output, output


# ------------------------------------------------------------------------------------------
# Untrusted by default: the sandbox, vault ids, kustomize
# ------------------------------------------------------------------------------------------

TOKEN = "tenant-b-admin-token-5f1e"


def play_with_secrets():
    """Variables of a play that syncs two tenants: another source's credentials among them."""
    return {"inventory_hostname": "the-cluster", "replicas": 3,
            "hostvars": {"the-cluster": {"stacksync_api_key": TOKEN}},
            "stacksync_sources": [{"repo": "https://git.example.com/b.git", "kubeconfig": {"token": TOKEN}}]}


def test_a_template_gets_template_vars_and_the_inventory_name_only(tmp_path):
    write(tmp_path, {"t/cm.yaml.j2": CM.format(name="{{ name }}") + "data:\n  cluster: '{{ inventory_hostname }}'\n"})
    lookup, variables = make_lookup(tmp_path, play_with_secrets())
    [cm] = lookup.run(["t"], variables, template_vars={"name": "web"})
    assert cm["data"] == {"cluster": "the-cluster"} and cm["metadata"]["name"] == "web"
    # a variable of the play is not there, even one a trusted template would see
    write(tmp_path, {"t/cm.yaml.j2": CM.format(name="web") + "data:\n  r: '{{ replicas }}'\n"})
    with pytest.raises(AnsibleError, match=r"cm\.yaml\.j2 \(line 6\): template error: 'replicas' is undefined"):
        lookup.run(["t"], variables)
    assert lookup.run(["t"], variables, trusted=True)[0]["data"] == {"r": "3"}


@pytest.mark.parametrize("expression, refused", [
    ("hostvars['the-cluster'].stacksync_api_key", "'hostvars'"),
    ("vars.stacksync_sources | to_json", "'vars'"),
    ("lookup('ansible.builtin.vars', 'stacksync_sources') | to_json", "'lookup'"),
    ("q('ansible.builtin.varnames', '.*') | join(',')", "'q'"),
    ("stacksync_sources | to_json", None),  # not given: undefined
])
def test_a_template_cannot_copy_another_sources_credentials(tmp_path, expression, refused):
    write(tmp_path, {"t/cm.yaml.j2": CM.format(name="steal") + "data:\n  loot: '{{ " + expression + " }}'\n"})
    lookup, variables = make_lookup(tmp_path, play_with_secrets())
    with pytest.raises(AnsibleError) as info:
        lookup.run(["t"], variables)
    message = str(info.value)
    assert "cm.yaml.j2 (line 6): template " in message and TOKEN not in message
    assert (refused in message and "template refused" in message) if refused else "is undefined" in message


def test_a_pipe_lookup_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    write(tmp_path, {"t/cm.yaml.j2": CM.format(name="x") + f"data:\n  k: \"{{{{ lookup('pipe', 'touch {marker}') }}}}\"\n"})
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError, match=r"cm\.yaml\.j2 \(line 6\): template refused: 'lookup' is not available"):
        lookup.run(["t"], variables)
    assert not marker.exists()
    lookup.run(["t"], variables, trusted=True)  # the control: trusted, the lookup runs
    assert marker.exists()


TEAM_A, TEAM_B = "team-a password", "team-b password"


def vault_value(password, label, value):
    secret = VaultSecret(password.encode())
    return VaultLib().encrypt(value.encode(), secret, vault_id=label).decode()


def two_tenants_lookup(basedir, variables=None):
    lookup, variables = make_lookup(basedir, variables, vault=False)
    lookup._loader.set_vault_secrets([("team-a", VaultSecret(TEAM_A.encode())),
                                      ("team-b", VaultSecret(TEAM_B.encode()))])
    return lookup, variables


def secret_manifest(name, value):
    return f"apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}}}\nstringData:\n  v: !vault |\n" + textwrap.indent(
        value, "    ") + "\n"


def test_vault_values_decrypt_only_with_the_sources_own_vault_ids(tmp_path):
    a_value = vault_value(TEAM_A, "team-a", "a-secret")
    write(tmp_path, {"a/s.yaml": secret_manifest("mine", a_value),
                     "b/s.yaml": secret_manifest("copied", a_value),  # tenant B copied tenant A's value
                     "b/f.yaml": VaultLib().encrypt(CM.format(name="f").encode(), VaultSecret(TEAM_A.encode()),
                                                    vault_id="team-a")})
    lookup, variables = two_tenants_lookup(tmp_path)
    assert lookup.run(["a"], variables, vault_id=["team-a"])[0]["stringData"] == {"v": "a-secret"}
    with pytest.raises(AnsibleError) as info:
        lookup.run(["b"], variables, vault_id=["team-b"], include=["s.yaml"])
    assert ("s.yaml (document 0, line 1): cannot decrypt a !vault value: no vault secret of the vault id(s) in "
            "vault_id (team-b) decrypts it (it is encrypted for vault id 'team-a')") in str(info.value)
    assert "a-secret" not in str(info.value)
    with pytest.raises(AnsibleError, match=r"f\.yaml: cannot decrypt the vault-encrypted file: no vault secret of the "
                                           r"vault id\(s\) in vault_id \(team-b\) decrypts it"):
        lookup.run(["b"], variables, vault_id=["team-b"], include=["f.yaml"])
    # no vault id: nothing is decrypted, and the message says how to bind one
    with pytest.raises(AnsibleError, match=r"decrypted only with the vault ids named in vault_id, and none is named "
                                           r"\(it is encrypted for vault id 'team-a'\)"):
        lookup.run(["a"], variables)
    # a vault id the play has no secret of
    with pytest.raises(AnsibleError, match=r"the play has no vault secret of the vault id\(s\) in vault_id \(team-c\)"):
        lookup.run(["a"], variables, vault_id=["team-c"])
    # trusted: every secret of the play (as before), unless vault_id binds it
    assert lookup.run(["b"], variables, trusted=True, include=["s.yaml"])[0]["stringData"] == {"v": "a-secret"}
    with pytest.raises(AnsibleError, match="no vault secret of the vault id"):
        lookup.run(["b"], variables, trusted=True, vault_id=["team-b"], include=["s.yaml"])


def test_a_vault_value_without_a_label_decrypts_with_a_secret_of_the_named_id_only(tmp_path):
    unlabelled = VaultLib().encrypt(b"b-secret", VaultSecret(TEAM_B.encode())).decode()  # format 1.1: no vault id
    write(tmp_path, {"b/s.yaml": secret_manifest("mine", unlabelled)})
    lookup, variables = two_tenants_lookup(tmp_path)
    assert lookup.run(["b"], variables, vault_id=["team-b"])[0]["stringData"] == {"v": "b-secret"}
    with pytest.raises(AnsibleError, match=r"no vault secret of the vault id\(s\) in vault_id \(team-a\) decrypts it \(in "):
        lookup.run(["b"], variables, vault_id=["team-a"])


@pytest.mark.parametrize("command", [
    ["kustomize", "build", "--load-restrictor", "LoadRestrictionsNone"],
    ["kubectl", "kustomize", "--load-restrictor=LoadRestrictionsNone"],
    ["kustomize", "build", "--enable-helm"],
    ["kustomize", "build", "--enable-alpha-plugins", "--enable-exec"],
])
def test_a_kustomize_command_that_relaxes_kustomize_is_refused_unless_trusted(tmp_path, command):
    write(tmp_path, {"t/cm.yaml": CM.format(name="x")})
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError, match="lets kustomizations reach outside their repository: refused unless trusted"):
        lookup.run(["t"], variables, kustomize_command=command)
    assert len(lookup.run(["t"], variables, kustomize_command=command, trusted=True)) == 1
