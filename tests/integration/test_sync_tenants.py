"""Two tenants' real git repositories in one sync (playbook ``stacksync.k8s.sync``, module
``stacksync.k8s.sources``): a tenant's templates render in the sandbox, its vault values decrypt with
its own vault id only, and each template escape of a hostile tenant fails its own source, naming the
file, the line and what was refused, with nothing of it written. Simulator and real server."""

import base64
import contextlib
import textwrap
import uuid

import pytest
from ansible.parsing.vault import VaultLib, VaultSecret
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

try:
    from .test_sync_helpers import GitRepo, clean_env, namespace, run_playbook, sim_of, write_inventory
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import GitRepo, clean_env, namespace, run_playbook, sim_of, write_inventory

WRITES = ("POST", "PUT", "PATCH", "DELETE")
TOKEN = "platform-admin-token-" + uuid.uuid4().hex[:8]


def cm_template(name, ns, data_lines):
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata:\n" + "".join(
        f"  {line}\n" for line in data_lines)


def vault_value(password, label, value):
    return VaultLib().encrypt(value.encode(), VaultSecret(password.encode()), vault_id=label).decode()


def secret_with(name, ns, vaulted):
    return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {ns}\nstringData:\n"
            "  password: !vault |\n" + textwrap.indent(vaulted, "    ") + "\n")


#: tenant B's escapes: directory -> (file, its text given tenant B's namespace and the marker path, what the error
#: names); the refused construct is on line 7 of each file
def escapes(ns, marker, a_vaulted):
    return {
        "lookup": ("cm.yaml.j2", cm_template("esc-lookup", ns, ["k: \"{{ lookup('pipe', 'touch " + str(marker) + "') }}\""]),
                   "template refused: 'lookup' is not available"),
        "query": ("cm.yaml.j2", cm_template("esc-query", ns, ["k: \"{{ query('file', '/etc/passwd') | first }}\""]),
                  "template refused: 'query' is not available"),
        "q": ("cm.yaml.j2", cm_template("esc-q", ns, ["k: \"{{ q('env', 'HOME') | first }}\""]),
              "template refused: 'q' is not available"),
        "hostvars": ("cm.yaml.j2", cm_template("esc-hostvars", ns, ["k: \"{{ hostvars | to_json | b64encode }}\""]),
                     "template refused: 'hostvars' is not available"),
        "play-variable": ("cm.yaml.j2", cm_template("esc-var", ns, ["k: \"{{ platform_token }}\""]),
                          "template error: 'platform_token' is undefined"),
        "attribute": ("cm.yaml.j2", cm_template("esc-attr", ns, ["k: \"{{ ''.__class__.__mro__[1].__subclasses__() }}\""]),
                      "template refused: attribute '__subclasses__' is not available"),
        "include-absolute": ("cm.yaml.j2", cm_template("esc-abs", ns, ["k: \"{% include '/etc/passwd' %}\""]),
                             "template refused: '/etc/passwd' is an absolute path"),
        "include-parent": ("cm.yaml.j2", cm_template("esc-parent", ns, ["k: \"{% include '../ok/cm.yaml.j2' %}\""]),
                           "template refused: '../ok/cm.yaml.j2' leaves the source's directory"),
        "filter": ("cm.yaml.j2", cm_template("esc-filter", ns, ["k: \"{{ '/etc/*' | fileglob | join(',') }}\""]),
                   "template refused: filter 'fileglob' is not available"),
        "vault-of-a": ("secret.yaml", secret_with("esc-vault", ns, a_vaulted),
                       "cannot decrypt a !vault value: no vault secret of the vault id(s) in vault_id (team-b) decrypts "
                       "it (it is encrypted for vault id 'team-a')"),
    }


@pytest.fixture
def tenants(tmp_path, kube):
    suffix = uuid.uuid4().hex[:6]
    client = build_client({"kubeconfig": kube.kubeconfig})[0]
    cleanup = []
    yield tmp_path, suffix, client, cleanup
    for path in reversed(cleanup):
        with contextlib.suppress(Exception):
            client.delete(path)


def test_two_tenants_templates_sandboxed_vault_values_their_own_escapes_refused(tenants, kube):
    tmp_path, suffix, client, cleanup = tenants
    ns_a, ns_b, ns_p = f"tenant-a-{suffix}", f"tenant-b-{suffix}", f"platform-{suffix}"
    cleanup += [f"/api/v1/namespaces/{n}" for n in (ns_a, ns_b, ns_p)]
    passwords = {"team-a": "team-a pass " + suffix, "team-b": "team-b pass " + suffix}
    for label, password in passwords.items():
        (tmp_path / f"{label}.pass").write_text(password + "\n")
    a_password = "a-db-password-" + uuid.uuid4().hex[:8]
    a_vaulted = vault_value(passwords["team-a"], "team-a", a_password)
    marker = tmp_path / "pwned-by-tenant-b"

    platform = GitRepo(tmp_path / "platform")  # the job author's own repository: trusted
    platform.write("ns.yaml", namespace(ns_p))
    platform.write("cm.yaml.j2", cm_template("platform", ns_p, ["domain: \"{{ platform_domain }}\"",
                                                                "home: \"{{ lookup('env', 'HOME') | length > 0 }}\""]))
    platform.commit("platform")
    a = GitRepo(tmp_path / "team-a")
    a.write("app/ns.yaml", namespace(ns_a))
    a.write("app/labels.inc", "team: \"{{ team }}\"\n")
    a.write("app/cm.yaml.j2", cm_template("settings", ns_a, ["replicas: \"{{ replicas * 2 }}\"",
                                                             "cluster: \"{{ inventory_hostname }}\"",
                                                             "{% include 'labels.inc' %}"]))
    a.write("app/secret.yaml", secret_with("db", ns_a, a_vaulted))
    a.commit("team a")
    b = GitRepo(tmp_path / "team-b")
    b.write("ok/ns.yaml", namespace(ns_b))
    b.write("ok/cm.yaml.j2", cm_template("fine", ns_b, ["greeting: \"{{ greeting | upper }}\""]))
    cases = escapes(ns_b, marker, a_vaulted)
    for case, (filename, text, _named) in cases.items():
        b.write(f"{case}/{filename}", text)
    b.commit("team b: one directory per escape")

    sources = [{"repo": platform.url, "stack": f"platform-{suffix}", "trusted": True},
               {"repo": a.url, "path": "app", "stack": f"a-{suffix}", "vars": {"replicas": 2, "team": "a"},
                "vault_id": ["team-a"]},
               {"repo": b.url, "path": "ok", "stack": f"b-{suffix}", "vars": {"greeting": "hello"},
                "vault_id": ["team-b"]}]
    sources += [{"repo": b.url, "path": case, "stack": f"b-{case}-{suffix}", "vault_id": ["team-b"]} for case in cases]
    inventory = write_inventory(tmp_path / "hosts.yml", {"the-cluster": {
        "stacksync_kubeconfig": kube.kubeconfig, "platform_token": TOKEN, "platform_domain": "example.com"}})
    mark = len(sim_of(kube).requests) if kube.is_sim else 0
    run = run_playbook(inventory, {"stacksync_sources": sources, "stacksync_cache_dir": str(tmp_path / "cache"),
                                   "stacksync_discovery_cache_dir": ""},
                       "--vault-id", f"team-a@{tmp_path / 'team-a.pass'}",
                       "--vault-id", f"team-b@{tmp_path / 'team-b.pass'}", env=clean_env())
    assert run.rc != 0, run.tail()

    # the trusted platform source: full templating (a play variable, a lookup)
    assert client.get(f"/api/v1/namespaces/{ns_p}/configmaps/platform")["data"] == {"domain": "example.com",
                                                                                  "home": "True"}
    # tenant A: its vars, the cluster's inventory name, an include of its own; its vault value, decrypted
    assert client.get(f"/api/v1/namespaces/{ns_a}/configmaps/settings")["data"] == {
        "replicas": "4", "cluster": "the-cluster", "team": "a"}
    secret = client.get(f"/api/v1/namespaces/{ns_a}/secrets/db")
    assert base64.b64decode(secret["data"]["password"]).decode() == a_password
    # tenant B's good source is applied; every escape fails its own source, naming the file, the line and why
    assert client.get(f"/api/v1/namespaces/{ns_b}/configmaps/fine")["data"] == {"greeting": "HELLO"}
    for case, (filename, _text, named) in cases.items():
        expected = f"stack b-{case}-{suffix}: stacksync.k8s.manifests: {case}/{filename} ("
        assert expected in run.stdout, (case, run.tail())
        message = run.stdout.split(expected, 1)[1].split("; stack ", 1)[0]
        line = "document 0, line 1" if case == "vault-of-a" else "line 7"
        assert message.startswith(line + "): " + named), (case, message)
    # nothing of them written, the pipe lookup never ran, no secret in the output
    names = [o["metadata"]["name"] for o in client.get(f"/api/v1/namespaces/{ns_b}/configmaps")["items"]]
    assert not [n for n in names if n.startswith("esc-")], names
    with pytest.raises(ApiError, match="404"):
        client.get(f"/api/v1/namespaces/{ns_b}/secrets/esc-vault")
    assert not marker.exists()
    assert TOKEN not in run.output and a_password not in run.output
    if kube.is_sim:  # not one write of an escape's object (or of an escape's stack: its record, its lock)
        escaped = [r for r in list(sim_of(kube).requests)[mark:] if r["method"] in WRITES
                   and ("/esc-" in r["path"] or any(f"b-{case}-{suffix}" in r["path"] for case in cases))]
        assert not escaped, escaped
