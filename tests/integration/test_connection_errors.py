"""What a person reads when the API server cannot be reached (issue 30): a dead server, a server that is not
TLS, a host name that does not resolve -- plain words and the URL, no urllib3 internals, no stray status 0.

The servers here are local stand-ins (a closed port, a plain HTTP server, a ``.invalid`` name), so these tests
run the same with or without ``STACKSYNC_TEST_KUBECONFIG``."""

import subprocess
from http.server import BaseHTTPRequestHandler

import pytest
import yaml

from tests.tools.net import closed_port, serving

try:
    from .test_sync_helpers import GitRepo, clean_env, configmap, localhost_play, module_task, run_play, run_playbook, write_inventory
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import GitRepo, clean_env, configmap, localhost_play, module_task, run_play, run_playbook, write_inventory

#: what must never reach a person: urllib3's class names and reprs, errno numbers, a status 0
INTERNALS = ("urllib3", "HTTPSConnection", "NewConnectionError", "ConnectionError", "Errno", "0 ConnectionError",
             "Max retries", "_ssl.c", "gave up after")



@pytest.fixture
def plain_http():
    class Quiet(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    with serving(Quiet) as port:
        yield port


def kubeconfig(tmp_path, server):
    doc = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
           "users": [{"name": "u", "user": {"token": "t"}}], "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
           "current-context": "x"}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def stack_result(tmp_path, server):
    tasks = module_task("stack", {"resources": [configmap("c1", "default", {"k": "v"})]}, ignore_errors=True)
    played = run_play(tmp_path, localhost_play(tasks), {"stack": "dead", "ns": "default", "kc": kubeconfig(tmp_path, server)})
    return played.result


def test_a_dead_server(tmp_path):
    port = closed_port()
    result = stack_result(tmp_path, f"https://127.0.0.1:{port}")
    assert result["failed"] is True
    msg = result["msg"]
    assert msg.startswith(f"cannot reach https://127.0.0.1:{port}: connection refused (6 tries in "), msg
    assert msg.endswith(" s)"), msg
    assert not [word for word in INTERNALS if word in msg], msg


def test_a_server_that_does_not_speak_tls(tmp_path, plain_http):
    result = stack_result(tmp_path, f"https://127.0.0.1:{plain_http}")
    msg = result["msg"]
    # not retried: the same server gives the same answer
    assert msg == f"cannot reach https://127.0.0.1:{plain_http}: TLS handshake failed: wrong version number (is it an http:// server?)", msg
    assert not [word for word in INTERNALS if word in msg], msg


def test_a_host_name_that_does_not_resolve(tmp_path):
    result = stack_result(tmp_path, "https://stacksync-no-such-host.invalid:6443")
    msg = result["msg"]
    assert msg.startswith("cannot reach https://stacksync-no-such-host.invalid:6443: the server's host name does not resolve (DNS: "), msg
    assert not [word for word in INTERNALS if word in msg], msg


def sync_a_dead_server(tmp_path, **role_vars):
    """``(port, run)``: the role's sync of a one-ConfigMap repository into a server that does not listen."""
    port = closed_port()
    repo = GitRepo(tmp_path / "repo")
    repo.write("deploy/c1.yml", configmap("c1", "default", {"k": "v"}))
    repo.commit("c1")
    inventory = write_inventory(tmp_path / "clusters.yml", {"cluster": {"stacksync_kubeconfig": kubeconfig(tmp_path, f"https://127.0.0.1:{port}")}})
    given = {k: (v.replace("REPO", repo.url) if isinstance(v, str) else [dict(s, repo=repo.url) for s in v])
             for k, v in role_vars.items()}
    return port, run_playbook(inventory, {"stacksync_cache_dir": str(tmp_path / "cache"), **given})


def test_a_dead_server_through_the_role(tmp_path):
    port, run = sync_a_dead_server(tmp_path, stacksync_sources=[{"path": "deploy", "stack": "dead"}])
    assert run.rc != 0, run.tail()
    assert f"cannot reach https://127.0.0.1:{port}: connection refused (6 tries in " in run.output, run.tail()
    assert not [word for word in INTERNALS if word in run.output], run.tail()


def test_a_rejected_certificate_through_the_role_names_its_variable_and_the_environment_variable(tmp_path, kube):
    """A CA that did not sign the server's certificate (here K8S_AUTH_SSL_CA_CERT, as AWX's credential sets it): the
    hint names what the role's user sets, not the module's option, however early the run found out."""
    repo = GitRepo(tmp_path / "repo")
    repo.write("deploy/c1.yml", configmap("c1", "default", {"k": "v"}))
    repo.commit("c1")
    inventory = write_inventory(tmp_path / "clusters.yml", {"cluster": {"stacksync_kubeconfig": kube.kubeconfig}})
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", "other-ca.key", "-out", "other-ca.crt", "-days", "2", "-subj", "/CN=other"],
                   cwd=str(tmp_path), check=True, capture_output=True)
    run = run_playbook(inventory, {"stacksync_cache_dir": str(tmp_path / "cache"), "stacksync_repo": repo.url,
                                   "stacksync_path": "deploy", "stacksync_stack": "tls"},
                       env=clean_env(K8S_AUTH_SSL_CA_CERT=str(tmp_path / "other-ca.crt")))
    assert run.rc != 0, run.tail()
    assert ": its TLS certificate was rejected: " in run.output, run.tail()
    assert ("(check the cluster's CA certificate: stacksync_ca_cert or the environment variable K8S_AUTH_SSL_CA_CERT, "
            "or certificate-authority in the kubeconfig)") in run.output, run.tail()
    assert "certificate: ca_cert" not in run.output, run.tail()


@pytest.fixture
def refusing_server():
    """An API server stand-in that refuses every request's credentials (401, as kube-apiserver says it)."""
    class Refuse(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_PATCH = do_POST = do_PUT = do_DELETE = do_GET

        def log_message(self, *args):
            pass

    with serving(Refuse) as port:
        yield port


def test_refused_credentials_say_so(tmp_path, refusing_server):
    result = stack_result(tmp_path, f"http://127.0.0.1:{refusing_server}")
    assert result["failed"] is True
    assert "401 Unauthorized: Unauthorized (the server did not accept the credentials" in result["msg"], result["msg"]


def test_a_dead_server_through_the_role_with_a_default_stack_name(tmp_path):
    """No word of a stack the user never had (the legacy name's lookup), one failure, its time counted."""
    port, run = sync_a_dead_server(tmp_path, stacksync_repo="REPO", stacksync_path="deploy")
    assert run.rc != 0, run.tail()
    lines = [line for line in run.stdout.splitlines() if line.startswith("stacksync [cluster] stack ")]
    assert len(lines) == 1 and f"FAILED: cannot reach https://127.0.0.1:{port}: connection refused (6 tries in " in lines[0], lines
    assert "0.2.0" not in run.output, run.tail()
    row = next(line.split() for line in run.stdout.splitlines() if "FAILED (pruning not run)" in line)
    assert float(row[-5]) >= 1.0, row  # the seconds its connection was tried (before: 0.0)
