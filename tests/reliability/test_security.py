"""Security (issue 9): nothing secret leaks, Secret checksums are keyed, TLS is verified, the lookup
stays inside the checkout."""

import base64
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import CHECKSUM_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import canonical, checksum, normalize_secret
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import RenderError, render

from . import helpers as H

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: sync with a token and a URL that carries credentials
      stacksync.k8s.stack:
        name: "{{ stack }}"
        host: "{{ host }}"
        api_key: "{{ token }}"
        ca_cert: "{{ ca | default(omit) }}"
        namespace: "{{ ns }}"
        record_namespace: "{{ ns }}"
        resources: "{{ resources }}"
      register: first
    - name: save the result
      ansible.builtin.copy:
        content: "{{ first | to_json }}"
        dest: "{{ out }}/first.json"
      diff: false
    - name: change the Secret (diff mode shows it changed, never its value)
      stacksync.k8s.stack:
        name: "{{ stack }}"
        host: "{{ host }}"
        api_key: "{{ token }}"
        ca_cert: "{{ ca | default(omit) }}"
        namespace: "{{ ns }}"
        record_namespace: "{{ ns }}"
        resources: "{{ resources2 }}"
      register: second
    - name: a failing run (unknown kind) with the same credentials
      stacksync.k8s.stack:
        name: "{{ stack }}"
        host: "{{ host }}"
        api_key: "{{ token }}"
        ca_cert: "{{ ca | default(omit) }}"
        namespace: "{{ ns }}"
        record_namespace: "{{ ns }}"
        resources: "{{ resources2 + [{'apiVersion': 'nope.example.com/v1', 'kind': 'Nope', 'metadata': {'name': 'x'}}] }}"
      register: third
      ignore_errors: true
    - name: save the results
      ansible.builtin.copy:
        content: "{{ [second, third] | to_json }}"
        dest: "{{ out }}/rest.json"
      diff: false
"""

TLS_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: wrong CA
      stacksync.k8s.stack:
        name: tls-check
        kubeconfig: "{{ wrong_ca_kubeconfig }}"
        namespace: default
        record_namespace: default
        resources: [{apiVersion: v1, kind: ConfigMap, metadata: {name: tls-check}}]
      register: wrong_ca
      ignore_errors: true
    - name: the right CA works
      stacksync.k8s.stack:
        name: tls-check
        host: "{{ server }}"
        api_key: "{{ token }}"
        ca_cert: "{{ ca }}"
        namespace: default
        record_namespace: default
        resources: [{apiVersion: v1, kind: ConfigMap, metadata: {name: tls-check}}]
      register: right_ca
    - name: save
      ansible.builtin.copy:
        content: "{{ [wrong_ca, right_ca] | to_json }}"
        dest: "{{ out }}"
"""


def playbook(tmp_path, text, variables, *args):
    play = tmp_path / "play.yml"
    play.write_text(text)
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(variables))
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=" + sys.executable, "-e", "@" + str(extra), str(play), *args]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    return proc


@pytest.fixture(scope="module")
def verbose_run(kubesim, tmp_path_factory):
    """One -vvv --diff playbook run (three module calls) with a token, URL credentials and Secrets."""
    tmp_path = tmp_path_factory.mktemp("vvv")
    admin = H.client_for(kubesim.kubeconfig)
    ns = "sec-" + uuid.uuid4().hex[:6]
    H.create_namespace(admin, ns)
    stack = "sec-" + ns
    url_password = "UrlPa55-" + uuid.uuid4().hex
    value = "S3cr3tValue-" + uuid.uuid4().hex
    value2 = "S3cr3tValue2-" + uuid.uuid4().hex
    data_value = "DataValue-" + uuid.uuid4().hex
    host = kubesim.server.replace("://", f"://urluser:{url_password}@")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "stringData": {"password": value}, "data": {"other": H.b64(data_value)}}
    resources = [secret, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}]
    resources2 = [dict(secret, stringData={"password": value2}), resources[1]]
    out = tmp_path / "out"
    out.mkdir()
    variables = dict(stack=stack, host=host, token=kubesim.token, ns=ns, resources=resources, resources2=resources2,
                     out=str(out))
    if kubesim.ca_cert:
        variables["ca"] = kubesim.ca_cert
    proc = playbook(tmp_path, PLAYBOOK, variables, "-vvv", "--diff")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]
    results = (out / "first.json").read_text() + (out / "rest.json").read_text()
    rest = json.loads((out / "rest.json").read_text())
    assert rest[0]["changed"] and rest[1].get("failed"), rest
    assert "Nope" in rest[1]["msg"]
    # what the cluster stores besides the Secret's own data: labels, annotations, the record
    stored = []
    for kind_objects in kubesim.dump().values():
        for obj in kind_objects:
            meta = obj.get("metadata") or {}
            stored.append(json.dumps([meta.get("labels"), meta.get("annotations")]))
            if obj.get("kind") != "Secret":
                stored.append(json.dumps(obj.get("data")))
    # ... and the sync did happen (so the checks are not vacuous)
    live = admin.get(f"/api/v1/namespaces/{ns}/secrets/s")
    assert base64.b64decode(live["data"]["password"]).decode() == value2
    H.delete_quietly(admin, "/api/v1/namespaces/" + ns)
    secrets = {}
    for v in (value, value2, data_value):
        secrets[v[:12] + " (plain)"] = v
        secrets[v[:12] + " (base64)"] = H.b64(v)
    return dict(text=text, results=results, stored="\n".join(stored), token=kubesim.token, url_password=url_password,
                secrets=secrets)


def _where(run, needle):
    return [name for name in ("text", "results", "stored") if needle in run[name]]


@pytest.mark.sim_only
def test_no_token_or_secret_value_in_vvv_output_results_or_cluster(verbose_run):
    """-vvv --diff output, module results (incl. a failed run) and labels/annotations/ConfigMaps on
    the cluster never contain the bearer token or a Secret value (plain or base64)."""
    needles = dict(verbose_run["secrets"], token=verbose_run["token"])
    leaks = {what: _where(verbose_run, needle) for what, needle in needles.items() if _where(verbose_run, needle)}
    assert not leaks, f"found (text = -vvv output, results = module results, stored = cluster): {leaks}"


@pytest.mark.sim_only
def test_no_url_credentials_in_vvv_output_results_or_cluster(verbose_run):
    """``host: https://user:password@...``: the password never shows up anywhere."""
    where = _where(verbose_run, verbose_run["url_password"])
    assert not where, f"URL password found in: {where}"


def test_secret_checksum_is_keyed(kube):
    """The checksum annotation of a Secret is not the plain sha256 of its canonical manifest, so it
    cannot be used to confirm a guessed value; a ConfigMap's is."""
    admin = H.client_for(kube.kubeconfig)
    ns = "hmac-" + uuid.uuid4().hex[:6]
    H.create_namespace(admin, ns)
    try:
        value = "guess-me-" + uuid.uuid4().hex
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": ns}, "stringData": {"pw": value}}
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}, "data": {"pw": value}}
        _cs, err = H.sync(admin, "hmac-" + ns, [json.loads(json.dumps(secret)), json.loads(json.dumps(cm))], namespace=ns,
                         record_namespace=ns)
        assert err is None, err
        live_s = admin.get(f"/api/v1/namespaces/{ns}/secrets/s")
        live_c = admin.get(f"/api/v1/namespaces/{ns}/configmaps/c")
        # an attacker who can read annotations guesses the right value and hashes it like a ConfigMap
        guess = normalize_secret(json.loads(json.dumps(secret)))
        plain = checksum(guess, ObjectId("", "Secret", ns, "s"))
        annotated = live_s["metadata"]["annotations"][CHECKSUM_ANNOTATION]
        assert annotated != plain
        assert value not in annotated and H.b64(value) not in json.dumps(live_s["metadata"])
        assert not annotated.startswith("sha256:"), annotated
        # the same computation does reproduce a ConfigMap's checksum (so the comparison above is meaningful)
        assert live_c["metadata"]["annotations"][CHECKSUM_ANNOTATION] == checksum(cm, ObjectId("", "ConfigMap", ns, "c"))
        assert canonical(guess)["data"]["pw"] == H.b64(value)
    finally:
        H.delete_quietly(admin, "/api/v1/namespaces/" + ns)


def _wrong_ca(tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(tmp_path / "wrong.key"), "-out", str(tmp_path / "wrong.crt"), "-days", "2",
                    "-subj", "/CN=not-the-cluster-ca"], check=True, capture_output=True)
    return tmp_path / "wrong.crt"


@pytest.mark.sim_only
def test_tls_verified_by_default_wrong_ca_fails(kubesim_factory, tmp_path):
    sim = kubesim_factory(tls=True)
    assert sim.server.startswith("https://")
    wrong = _wrong_ca(tmp_path)
    import yaml

    with open(sim.kubeconfig) as f:
        config = yaml.safe_load(f)
    config["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(wrong.read_bytes()).decode()
    wrong_kc = tmp_path / "wrong-ca.kubeconfig"
    wrong_kc.write_text(yaml.safe_dump(config))
    out = tmp_path / "tls.json"
    proc = playbook(tmp_path, TLS_PLAYBOOK, dict(wrong_ca_kubeconfig=str(wrong_kc), server=sim.server, token=sim.token,
                                                 ca=sim.ca_cert, out=str(out)))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    wrong_ca, right_ca = json.loads(out.read_text())
    assert wrong_ca.get("failed"), wrong_ca
    assert f"cannot reach {sim.server}: its TLS certificate was rejected: " in wrong_ca["msg"], wrong_ca["msg"]  # in plain words
    assert right_ca.get("changed") and not right_ca.get("failed"), right_ca
    # the refused connections never reached the API: every request logged came from the right-CA run
    assert right_ca["counts"]["created"] == 1


# -- the lookup stays inside the checkout -------------------------------------------------------------
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n"


def _checkout(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.yaml").write_text(CM.format("stolen"))
    checkout = tmp_path / "checkout"
    (checkout / "apps").mkdir(parents=True)
    (checkout / "apps" / "ok.yaml").write_text(CM.format("ok"))
    return checkout, outside


def test_lookup_refuses_dotdot_escaping_the_checkout(tmp_path):
    checkout, _outside = _checkout(tmp_path)
    with pytest.raises(RenderError, match="outside the checkout"):
        render(str(checkout / "apps" / ".." / ".." / "outside"), root=str(checkout))
    assert [m["metadata"]["name"] for m in render(str(checkout / "apps" / ".." / "apps"), root=str(checkout))] == ["ok"]


@pytest.mark.parametrize("link", ["file", "dir", "relative-dir", "nested"])
def test_lookup_refuses_symlinks_escaping_the_checkout(tmp_path, link):
    checkout, outside = _checkout(tmp_path)
    apps = checkout / "apps"
    if link == "file":
        (apps / "evil.yaml").symlink_to(outside / "stolen.yaml")
    elif link == "dir":
        (apps / "evil").symlink_to(outside, target_is_directory=True)
    elif link == "relative-dir":
        (apps / "evil").symlink_to("../../outside", target_is_directory=True)
    else:  # a link inside the checkout to a link that leaves it
        (checkout / "hop").symlink_to(outside, target_is_directory=True)
        (apps / "evil").symlink_to(checkout / "hop", target_is_directory=True)
    with pytest.raises(RenderError, match="outside the checkout") as info:
        render(str(checkout), root=str(checkout))
    assert "evil" in str(info.value)


LOOKUP_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: dotdot
      ansible.builtin.set_fact:
        found: "{{ query('stacksync.k8s.manifests', checkout ~ '/apps/../../outside', root=checkout) }}"
      register: dotdot
      ignore_errors: true
    - name: symlink
      ansible.builtin.set_fact:
        found: "{{ query('stacksync.k8s.manifests', checkout, root=checkout) }}"
      register: symlink
      ignore_errors: true
    - name: save
      ansible.builtin.copy:
        content: "{{ [dotdot, symlink] | to_json }}"
        dest: "{{ out }}"
"""


def test_lookup_plugin_refuses_escapes_through_ansible(tmp_path):
    checkout, outside = _checkout(tmp_path)
    (checkout / "apps" / "evil.yaml").symlink_to(outside / "stolen.yaml")
    out = tmp_path / "lookup.json"
    proc = playbook(tmp_path, LOOKUP_PLAYBOOK, dict(checkout=str(checkout), out=str(out)))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    dotdot, symlink = json.loads(out.read_text())
    assert dotdot.get("failed") and "outside the checkout" in dotdot["msg"], dotdot
    assert symlink.get("failed") and "outside the checkout" in symlink["msg"] and "evil.yaml" in symlink["msg"], symlink
    assert "stolen" not in json.dumps([dotdot, symlink]).replace("stolen.yaml", "")


@pytest.mark.parametrize("url", [
    "https://deploy-bot:ghp_T0kenValue123@github.com/acme/cluster-config.git",
    "https://ghp_T0kenValue123@github.com/acme/cluster-config.git",
    "ssh://git:ghp_T0kenValue123@git.example.com:2222/acme/cluster-config",
    "https://oauth2:ghp_T0kenValue123@gitlab.example.com/group/sub/cluster-config.git",
])
def test_stack_name_from_a_url_never_carries_its_credentials(url):
    """The default stack name (a label value on every object) is derived from the repo URL."""
    from ansible_collections.stacksync.k8s.plugins.filter.redact_url import redact_url_filter
    from ansible_collections.stacksync.k8s.plugins.filter.stack_name import stack_name_filter

    for path in ("", "clusters/prod"):
        name = stack_name_filter(url, path)
        assert "T0kenValue" not in name and "deploy-bot" not in name, name
        assert H.valid_label_value(name), name
    assert "T0kenValue" not in redact_url_filter(f"cloning {url} failed")


@pytest.mark.sim_only
def test_rejected_certificate_fails_at_once_without_retries(kubesim_factory, tmp_path):
    """A certificate the CA does not vouch for is not a transient error: one request, a TLS error, no retry."""
    import yaml
    from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
    from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

    sim = kubesim_factory(tls=True)
    config = yaml.safe_load(Path(sim.kubeconfig).read_text())
    config["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(_wrong_ca(tmp_path).read_bytes()).decode()
    wrong_kc = tmp_path / "wrong-ca.kubeconfig"
    wrong_kc.write_text(yaml.safe_dump(config))
    client, _namespace = build_client({"kubeconfig": str(wrong_kc)}, environ={})
    with pytest.raises(ApiError) as err:
        client.get("/api")
    assert err.value.reason == "TLSError"
    assert "certificate" in str(err.value)
    assert client.counts == {"GET": 1}
