"""execcred.py: the exec credential plugin protocol, its failures in kubectl's words, and its cache."""

import json
import os
import stat
import sys
import textwrap

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import execcred as E
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.kubeconfig import AuthError

V1 = "client.authentication.k8s.io/v1"
TOKEN = "exec-T0KEN-secret"


def plugin(**kw):
    base = {"apiVersion": V1, "command": "p", "interactiveMode": "Never", "user": "u",
            "cluster": {"server": "https://c:6443", "ca_data": b"CA PEM", "tls_server_name": None, "insecure": False,
                        "proxy_url": None, "disable_compression": False, "extensions": []}}
    return dict(base, **kw)


def answer(status=None, version=V1, kind="ExecCredential"):
    return json.dumps({"apiVersion": version, "kind": kind, "status": {"token": TOKEN} if status is None else status})


def script(tmp_path, body, name="plugin"):
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{textwrap.dedent(body)}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_exec_info_is_what_client_go_sends():
    assert E.exec_info(plugin()) == {"apiVersion": V1, "kind": "ExecCredential", "spec": {"interactive": False}}
    ext = {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "k8s"}}
    p = plugin(provideClusterInfo=True)
    p["cluster"].update(tls_server_name="api", extensions=[ext])
    assert E.exec_info(p)["spec"]["cluster"] == {"server": "https://c:6443", "tls-server-name": "api",
                                                 "certificate-authority-data": "Q0EgUEVN", "config": {"audience": "k8s"}}


@pytest.mark.parametrize("change, message", [
    ({"apiVersion": "client.authentication.k8s.io/v9"}, 'exec plugin: invalid apiVersion "client.authentication.k8s.io/v9"'),
    ({"apiVersion": "client.authentication.k8s.io/v1alpha1"},
     'exec plugin: invalid apiVersion "client.authentication.k8s.io/v1alpha1"'),
    ({"interactiveMode": "Always"},
     "getting credentials: exec plugin cannot support interactive mode: standard input is not a terminal"),
])
def test_plugins_kubectl_cannot_run_are_refused_before_running(change, message):
    with pytest.raises(AuthError) as err:
        E.run_plugin(plugin(**change), run=lambda *a, **k: pytest.fail("ran the plugin"))
    assert str(err.value) == message


def test_the_entry_env_wins_over_ours_and_exec_info_is_last():
    env = E.plugin_env(plugin(env=[{"name": "A", "value": "entry"}, {"name": "EMPTY", "value": None}]),
                       {"A": "ours", "PATH": "/bin", "KUBERNETES_EXEC_INFO": "stale"}, {"k": 1})
    assert env == {"A": "entry", "EMPTY": "", "PATH": "/bin", "KUBERNETES_EXEC_INFO": '{"k":1}'}


@pytest.mark.parametrize("stdout, message", [
    ("not json", "getting credentials: decoding stdout: couldn't get version/kind; json parse error: "),
    ("[1]", "getting credentials: decoding stdout: couldn't get version/kind; json parse error: the output is not a JSON object"),
    (json.dumps({"apiVersion": V1, "status": {"token": TOKEN}}), "getting credentials: decoding stdout: Object 'Kind' is missing"),
    (answer(kind="Foo"), f'getting credentials: decoding stdout: no kind "Foo" is registered for version "{V1}"'),
    (answer(version="client.authentication.k8s.io/v1beta1"),
     f"getting credentials: exec plugin is configured to use API version {V1}, plugin returned version "
     "client.authentication.k8s.io/v1beta1"),
    (json.dumps({"apiVersion": V1, "kind": "ExecCredential"}), "getting credentials: exec plugin didn't return a status field"),
    (answer(status={}), "getting credentials: exec plugin didn't return a token or cert/key pair"),
    (answer(status={"clientCertificateData": "C"}),
     "getting credentials: exec plugin returned only certificate or key, not both"),
])
def test_wrong_answers_fail_in_kubectls_words_without_quoting_the_output(stdout, message):
    with pytest.raises(AuthError) as err:
        E.parse_output(stdout, V1)
    assert str(err.value).startswith(message)
    assert TOKEN not in str(err.value)


def test_token_and_certificate_answers_and_their_expiry():
    cred = E.parse_output(answer({"token": TOKEN, "expirationTimestamp": "2030-01-02T03:04:05Z"}), V1)
    assert cred.token == TOKEN and cred.expiry == 1893553445.0 and not cred.expired(1893553445.0) and cred.expired(1893553446)
    cred = E.parse_output(answer({"clientCertificateData": "CERT", "clientKeyData": "KEY",
                                  "expirationTimestamp": "2030-01-02T03:04:05.123456789+00:00"}), V1)
    assert (cred.token, cred.cert_data, cred.key_data, int(cred.expiry)) == (None, b"CERT", b"KEY", 1893553445)
    assert E.parse_output(answer(), V1).expiry is None
    with pytest.raises(AuthError, match="invalid expirationTimestamp"):
        E.parse_output(answer({"token": TOKEN, "expirationTimestamp": "tomorrow"}), V1)


def test_a_missing_plugin_names_itself_and_its_install_hint(tmp_path):
    for command in ("stacksync-no-such-plugin", str(tmp_path / "bin" / "missing")):
        with pytest.raises(AuthError) as err:
            E.run_plugin(plugin(command=command, installHint="Install it: https://example.invalid/plugin"), environ={"PATH": "/nowhere"})
        assert str(err.value) == (f"getting credentials: exec: executable {command} not found{E.INSTALL_HELP}\n\nInstall it: https://example.invalid/plugin")


def test_a_failing_plugin_says_its_exit_code_and_its_own_error(tmp_path):
    command = script(tmp_path, f"""\
        import sys
        print("{TOKEN}")  # on stdout: never quoted
        sys.stderr.write("plugin says no: expired login\\n")
        sys.exit(3)
        """)
    with pytest.raises(AuthError) as err:
        E.run_plugin(plugin(command=command), environ={})
    assert str(err.value) == (f"getting credentials: exec: executable {command} failed with exit code 3; its error output: "
                              "plugin says no: expired login")
    assert TOKEN not in str(err.value)
    assert "x" * E.STDERR_LIMIT in E.failure("p", code=1, stderr="y" * 10 + "x" * E.STDERR_LIMIT)
    assert "y" not in E.failure("p", code=1, stderr="y" * 10 + "x" * E.STDERR_LIMIT).split("; ")[1]


def test_a_plugin_that_is_not_executable(tmp_path):
    path = tmp_path / "plugin"
    path.write_text("#!/bin/sh\n")
    with pytest.raises(AuthError, match=r"getting credentials: exec: fork/exec .*/plugin: permission denied"):
        E.run_plugin(plugin(command=str(path)), environ={})


def test_the_plugin_runs_with_args_env_and_exec_info_and_no_stdin(tmp_path):
    command = script(tmp_path, """\
        import json, os, sys
        info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
        assert sys.stdin.read() == "", "stdin is not empty"
        status = {"token": "-".join([sys.argv[1], os.environ["FROM_ENTRY"], str(info["spec"]["interactive"])])}
        print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}))
        """)
    cred = E.run_plugin(plugin(command=command, args=["arg"], env=[{"name": "FROM_ENTRY", "value": "env"}]), environ={})
    assert cred.token == "arg-env-False"


def test_credentials_are_cached_until_they_expire():
    runs = []

    def run(p, environ):
        runs.append(1)
        return E.Credential(token=f"t{len(runs)}", expiry=100.0)

    clock = [50.0]
    p = plugin(command=f"cached-{os.getpid()}")
    assert E.credential(p, {}, now=lambda: clock[0], run=run).token == "t1"
    assert E.credential(p, {}, now=lambda: clock[0], run=run).token == "t1"
    clock[0] = 100.5
    assert E.credential(p, {}, now=lambda: clock[0], run=run).token == "t2" and len(runs) == 2
    assert E.credential(dict(p, args=["other"]), {}, now=lambda: clock[0], run=run).token == "t3"  # another plugin


def test_the_user_is_named_in_the_error():
    assert str(E.user_error(plugin(), AuthError("getting credentials: x"))) == 'kubeconfig user "u": getting credentials: x'
