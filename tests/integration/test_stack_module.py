"""The real `stacksync.k8s.stack` module through ansible-playbook (localhost, -c local)."""

import base64
import json
import os
import sys
import uuid

import pytest

try:
    from .test_sync_helpers import client_fixture, localhost_play, module_task, run_play
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import client_fixture, localhost_play, module_task, run_play

PLAYBOOK = localhost_play(module_task("stack", {"record_namespace": "{{ record_ns }}",
                                                 "commit": "{{ commit | default(omit) }}", "resources": "{{ resources }}"}))


NS_PREFIX = "ss-mod"  # tests/conftest.py's ns fixture
client = client_fixture()


INFO_PLAYBOOK = localhost_play(module_task("stack_info", {"record_namespace": "{{ record_ns }}",
                                                           "resources": "{{ resources }}"}, name="info"))


def run(tmp_path, kube, args, variables, verbose=False, playbook=PLAYBOOK, interpreter=True, inventory="localhost,",
        env=None):
    """Run ``playbook`` on localhost (``-c local``); its registered ``r`` and the output.

    ``interpreter``: pass ``ansible_python_interpreter`` (this Python) as an extra variable; ``env``:
    environment variables to set (``None`` values removed).
    """
    played = run_play(tmp_path, playbook, dict(variables, kc=kube.kubeconfig), *args, *(["-vvv"] if verbose else []),
                      interpreter=interpreter, inventory=inventory, env=env)
    return played.result, played.log


IN_PROCESS = "stacksync.k8s.stack: running in the controller's process"
MODULE_PROCESS = "stacksync.k8s.stack: running as a module process"


@pytest.mark.parametrize("in_process", [True, False], ids=["controller-process", "module-process"])
def test_module_sync_noop_check_and_no_secret_in_output(tmp_path, kube, client, ns, in_process):
    stack = "mod-" + uuid.uuid4().hex[:6]
    value = "pa55-" + uuid.uuid4().hex
    resources = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"pw": value}},
    ]
    variables = dict(stack=stack, ns=ns, record_ns=ns, resources=resources, commit="c0ffee",
                     stacksync_in_process=in_process)
    r, log = run(tmp_path, kube, ["--diff"], variables, verbose=True)
    assert r["changed"] and r["counts"]["created"] == 2
    assert (IN_PROCESS if in_process else MODULE_PROCESS + " (stacksync_in_process is false)") in log
    # the invocation (shown with -vvv; not kept in registered results) lists the objects by identity
    assert '"v1 ConfigMap c",' in log and '"v1 Secret s"' in log
    assert [(a["kind"], a["name"], a["action"]) for a in r["applied"]] == [
        ("ConfigMap", "c", "created"), ("Secret", "s", "created")]
    for needle in (value, base64.b64encode(value.encode()).decode()):
        assert needle not in log and needle not in json.dumps(r)

    r, log = run(tmp_path, kube, [], variables)
    assert not r["changed"] and r["counts"]["unchanged"] == 2
    assert r["applied"] == []  # counted, not listed (report_unchanged)
    assert set(r["api_requests"]) == {"GET"}, r["api_requests"]

    variables["resources"] = [dict(resources[0], data={"a": "2"})]
    r, log = run(tmp_path, kube, ["--check", "--diff"], variables, verbose=True)
    assert r["changed"] and r["counts"]["configured"] == 1 and r["counts"]["pruned"] == 1
    assert value not in log
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/c")["data"]["a"] == "1"
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/secrets/s") is not None

    r, log = run(tmp_path, kube, [], variables)
    assert r["changed"] and [p["name"] for p in r["pruned"]] == ["s"]
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/secrets/s") is None


SRC_PLAYBOOK = localhost_play(module_task("stack", {"record_namespace": "{{ record_ns }}", "src": "{{ src }}",
                                                     "render": "{{ render | default(omit) }}"}, ignore_errors=True))


@pytest.mark.parametrize("in_process", [True, False], ids=["controller-process", "module-process"])
def test_src_is_rendered_on_the_controller_and_a_broken_tree_writes_nothing(tmp_path, kube, client, ns, in_process):
    tree = tmp_path / "checkout"
    (tree / "apps" / "legacy").mkdir(parents=True)
    (tree / "apps" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: '1'}\n---\n"
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: listed}}\n")
    (tree / "apps" / "tpl.yaml.j2").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: templated}\n"
        "data: {stack: '{{ stack }}', replicas: '{{ replicas }}'}\n")
    (tree / "apps" / "legacy" / "old.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: legacy}\n")
    stack = "src-" + uuid.uuid4().hex[:6]
    variables = dict(stack=stack, ns=ns, record_ns=ns, src=str(tree / "apps"), stacksync_in_process=in_process,
                     render=dict(root=str(tree), exclude=["legacy"], template_vars=dict(replicas=3), trusted=True))
    # trusted: this repository's templates get the task's variables (``stack``), as the playbook's own would
    r, log = run(tmp_path, kube, [], variables, verbose=True, playbook=SRC_PLAYBOOK)
    assert not r.get("failed"), r
    assert (IN_PROCESS if in_process else MODULE_PROCESS) in log
    assert sorted(a["name"] for a in r["applied"]) == ["listed", "plain", "templated"]
    data = client.get(f"/api/v1/namespaces/{ns}/configmaps/templated")["data"]
    assert data == {"stack": stack, "replicas": "3"}  # task variables and template_vars
    annotations = client.get(f"/api/v1/namespaces/{ns}/configmaps/plain")["metadata"]["annotations"]
    assert "stacksync.io/source" not in annotations

    # a broken file fails the task naming the file and document; nothing is written, nothing pruned
    (tree / "apps" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n---\n"
                                          "kind: ConfigMap\nmetadata: {name: [oops\n")
    (tree / "apps" / "new.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\n")
    r, log = run(tmp_path, kube, [], variables, playbook=SRC_PLAYBOOK)
    assert r["failed"] and "cm.yaml" in r["msg"] and "document 1" in r["msg"], r["msg"]
    assert "api_requests" not in r
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/new") is None
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/listed") is not None


LOOKUP_PLAYBOOK = localhost_play(
    module_task("stack", {"record_namespace": "{{ record_ns }}",
                          "resources": "{{ lookup('stacksync.k8s.manifests', tree) }}"}, ignore_errors=True)
    + module_task("stack_info", {"record_namespace": "{{ record_ns }}",
                                 "resources": "{{ lookup('stacksync.k8s.manifests', tree) }}"}, name="info")
    .replace("register: r", "register: info"), saved="{'sync': r, 'info': info}")


@pytest.mark.parametrize("in_process", [True, False], ids=["controller-process", "module-process"])
def test_resources_from_lookup_without_wantlist_hold_one_manifest_or_several(tmp_path, kube, client, ns, in_process):
    """``lookup()`` without ``wantlist=True`` gives the only manifest of a tree of one as a mapping (ansible-core
    unwraps a list of one): ``resources`` takes it as the list of one it stands for, as it takes several."""
    tree = tmp_path / "manifests"
    tree.mkdir()
    (tree / "one.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {a: '1'}\n")
    stack = "lk-" + uuid.uuid4().hex[:6]
    variables = dict(stack=stack, ns=ns, record_ns=ns, tree=str(tree), stacksync_in_process=in_process)
    r, _log = run(tmp_path, kube, [], variables, playbook=LOOKUP_PLAYBOOK)
    assert not r["sync"].get("failed"), r["sync"]
    assert [(a["kind"], a["name"], a["action"]) for a in r["sync"]["applied"]] == [("ConfigMap", "one", "created")]
    assert [(o["name"], o["status"]) for o in r["info"]["objects"]] == [("one", "in_sync")], r["info"]
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/one")["data"] == {"a": "1"}

    (tree / "two.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\n")
    r, _log = run(tmp_path, kube, [], variables, playbook=LOOKUP_PLAYBOOK)
    assert not r["sync"].get("failed"), r["sync"]
    assert [(a["name"], a["action"]) for a in r["sync"]["applied"]] == [("two", "created")]
    assert sorted(o["name"] for o in r["info"]["objects"]) == ["one", "two"]


VALIDATION_PLAYBOOK = localhost_play("""
    - name: sync
      stacksync.k8s.stack: "{{ args }}"
      register: r
      ignore_errors: true
""")


@pytest.mark.parametrize("args, message", [
    ({"name": "x", "bogus": 1}, "Unsupported parameters for (stacksync.k8s.stack) module: bogus"),
    ({"name": "x", "src": "/nonexistent", "resources": []}, "parameters are mutually exclusive: resources|src"),
    ({"name": "x", "concurrency": "many"}, "argument 'concurrency' is of type"),
    ({"name": "x", "concurrency": 0, "kubeconfig": "/nonexistent"}, "concurrency must be at least 1"),
    ({"name": "x", "src": "/nonexistent/manifests"}, "/nonexistent/manifests does not exist"),
])
@pytest.mark.parametrize("in_process", [True, False], ids=["controller-process", "module-process"])
def test_invalid_arguments_fail_alike_in_both_processes(tmp_path, kube, args, message, in_process):
    r, _log = run(tmp_path, kube, [], dict(args=args, stacksync_in_process=in_process), playbook=VALIDATION_PLAYBOOK)
    assert r["failed"] and message in r["msg"], r["msg"]


def test_a_stacksync_in_process_that_is_not_a_boolean_fails_the_task(tmp_path, kube, client, ns):
    args = dict(name="notbool", kubeconfig=kube.kubeconfig, namespace=ns, record_namespace=ns,
                resources=[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}])
    r, _log = run(tmp_path, kube, [], dict(args=args, stacksync_in_process="sometimes"), playbook=VALIDATION_PLAYBOOK)
    assert r["failed"] and r["msg"].startswith("stacksync_in_process: ") and "sometimes" in r["msg"], r["msg"]
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/c") is None


@pytest.mark.parametrize("in_process", [True, False], ids=["controller-process", "module-process"])
def test_credentials_are_masked_in_the_result_of_either_process(tmp_path, kube, ns, in_process):
    secret = "pw-" + uuid.uuid4().hex
    token = "tok-" + uuid.uuid4().hex
    args = dict(name="creds", kubeconfig=kube.kubeconfig, namespace=ns, record_namespace=ns, api_key=token,
                password=secret, username="someone", host=f"https://someone:{secret}@127.0.0.1:9",
                resources=[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}])
    r, log = run(tmp_path, kube, [], dict(args=args, stacksync_in_process=in_process), verbose=True,
                 playbook=VALIDATION_PLAYBOOK)
    assert r["failed"], r  # nothing listens on port 9
    assert secret not in log and secret not in json.dumps(r)
    assert token not in log and token not in json.dumps(r)
    # the invocation shown with -vvv
    assert '"api_key": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' in log
    assert '"password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' in log
    assert '"host": "https://********@127.0.0.1:9"' in log


ASYNC_PLAYBOOK = localhost_play(module_task("stack", {"resources": [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bg"}, "data": {"a": "1"}}]}, **{"async": 120, "poll": 1}))


def test_an_async_task_runs_as_a_module_process_in_the_background(tmp_path, kube, client, ns):
    r, log = run(tmp_path, kube, [], dict(stack="bg-" + uuid.uuid4().hex[:6], ns=ns), verbose=True,
                 playbook=ASYNC_PLAYBOOK)
    assert MODULE_PROCESS + " (async task)" in log
    assert r["changed"] and r["counts"]["created"] == 1 and r["finished"] == 1, r
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/bg")["data"] == {"a": "1"}


def test_stack_info_module(tmp_path, kube, ns):
    stack = "inf-" + uuid.uuid4().hex[:6]
    resources = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}]
    variables = dict(stack=stack, ns=ns, record_ns=ns, resources=resources, commit="beef")
    run(tmp_path, kube, [], variables)
    variables["resources"] = [dict(resources[0], data={"a": "2"})]
    r, _ = run(tmp_path, kube, [], variables, playbook=INFO_PLAYBOOK)
    assert not r["changed"] and r["commit"] == "beef"
    assert [(o["name"], o["status"]) for o in r["objects"]] == [("c", "out_of_date")]


CACHE_PLAYBOOK = localhost_play(module_task("stack", {"record_namespace": "{{ record_ns }}", "discovery_cache_dir": "{{ cache }}",
                                                       "resources": "{{ resources }}"}, ignore_errors=True))


def _cached_configmaps(cache):
    (path,) = list(cache.glob("stacksync-discovery-*.json"))
    doc = json.loads(path.read_text())
    return path, doc, [r for r in doc["resources"] if r[0] == "" and r[2] == "ConfigMap"]


def test_discovery_cache_is_shared_between_runs_refreshed_on_a_miss_and_dropped_after_a_failure(tmp_path, kube, ns):
    cache = tmp_path / "cache"
    variables = dict(stack="cache-" + uuid.uuid4().hex[:6], ns=ns, record_ns=ns, cache=str(cache), resources=[
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}])
    r, _log = run(tmp_path, kube, [], variables, playbook=CACHE_PLAYBOOK)
    assert r["changed"] and not r.get("failed"), r
    path, doc, configmaps = _cached_configmaps(cache)
    assert len(configmaps) == 1 and configmaps[0][3] == "configmaps" and configmaps[0][4] is True

    # a miss (the kind is not in the cache) reads discovery again and rewrites the cache
    doc["resources"] = [r for r in doc["resources"] if r[2] != "ConfigMap"]
    path.write_text(json.dumps(doc))
    variables["resources"][0]["data"] = {"a": "2"}
    r, _log = run(tmp_path, kube, [], variables, playbook=CACHE_PLAYBOOK)
    assert r["changed"] and r["counts"]["configured"] == 1 and not r.get("failed"), r
    assert len(_cached_configmaps(cache)[2]) == 1

    # a stale entry is used as it is (no discovery request); the failure it causes drops the cache
    path, doc, configmaps = _cached_configmaps(cache)
    configmaps[0][3] = "configmapz"
    path.write_text(json.dumps(doc))
    variables["resources"][0]["data"] = {"a": "3"}
    r, _log = run(tmp_path, kube, [], variables, playbook=CACHE_PLAYBOOK)
    assert r["failed"] and "could not find the requested resource" in r["msg"], r
    assert not list(cache.glob("stacksync-discovery-*.json"))
    r, _log = run(tmp_path, kube, [], variables, playbook=CACHE_PLAYBOOK)
    assert r["changed"] and not r.get("failed"), r
    assert _cached_configmaps(cache)[2][0][3] == "configmaps"


# --- every way of setting the interpreter: the task runs in the controller's process when it is this Python ---------

VENV_BIN = os.path.dirname(sys.executable)
# the controller's Python under the name interpreter discovery looks for first (python3.X), found on PATH
VERSIONED = "python{}.{}".format(*sys.version_info[:2])
DISCOVERY = dict(PATH=VENV_BIN + os.pathsep + "/usr/bin:/bin")
DISCOVERY_VARS = dict(ansible_interpreter_python_fallback=[VERSIONED, "/usr/bin/python3"])


def interpreter_setting(tmp_path, how):
    """``run`` keyword arguments (and extra variables) setting the interpreter to this Python in the way ``how``."""
    no_env = dict(ANSIBLE_PYTHON_INTERPRETER=None, ANSIBLE_CONFIG=None)
    if how == "host-variable":
        inventory = tmp_path / "hosts.yml"
        inventory.write_text("all:\n  hosts:\n    localhost:\n"
                             "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
        return dict(interpreter=False, inventory=str(inventory), env=no_env), {}
    if how == "environment":
        return dict(interpreter=False, env=dict(no_env, ANSIBLE_PYTHON_INTERPRETER=sys.executable)), {}
    if how == "ansible.cfg":
        cfg = tmp_path / "ansible.cfg"
        cfg.write_text(f"[defaults]\ninterpreter_python = {sys.executable}\n")
        return dict(interpreter=False, env=dict(no_env, ANSIBLE_CONFIG=str(cfg))), {}
    if how == "implicit-localhost":  # an inventory without localhost: Ansible adds it, with its own Python
        inventory = tmp_path / "empty.yml"
        inventory.write_text("all: {}\n")
        return dict(interpreter=False, inventory=str(inventory), env=no_env), {}
    if how == "discovery":  # nothing set: discovery (auto) finds this Python first on PATH
        return dict(interpreter=False, env=dict(no_env, **DISCOVERY)), DISCOVERY_VARS
    raise AssertionError(how)


HOW = {
    "host-variable": "variable ansible_python_interpreter",
    "environment": "environment variable ANSIBLE_PYTHON_INTERPRETER",
    "ansible.cfg": "interpreter_python in ",
    "implicit-localhost": None,
    "discovery": "interpreter discovery (auto, from the default)",
}


@pytest.mark.parametrize("how", list(HOW))
@pytest.mark.parametrize("form", ["resources", "src"])
def test_every_way_of_setting_the_controllers_python_runs_in_the_controllers_process(tmp_path, kube, client, ns, how,
                                                                                    form):
    kwargs, extra = interpreter_setting(tmp_path, how)
    stack = "how-" + uuid.uuid4().hex[:6]
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    variables = dict(extra, stack=stack, ns=ns, record_ns=ns)
    if form == "src":
        (tmp_path / "src").mkdir()
        (tmp_path / "src" / "c.json").write_text(json.dumps(manifest))
        variables["src"] = str(tmp_path / "src")
        playbook = SRC_PLAYBOOK
    else:
        variables["resources"] = [manifest]
        playbook = PLAYBOOK
    r, log = run(tmp_path, kube, [], variables, verbose=True, playbook=playbook, **kwargs)
    assert not r.get("failed") and r["changed"] and r["counts"]["created"] == 1, r
    assert IN_PROCESS in log and MODULE_PROCESS not in log, log[-3000:]
    if how == "discovery":  # discovery ran once, in the action plugin, and its result is the host's fact
        assert r["ansible_facts"]["discovered_interpreter_python"] == os.path.join(VENV_BIN, VERSIONED)
    else:
        assert "discovered_interpreter_python" not in r.get("ansible_facts", {})
    # the same setting with stacksync_in_process off: a module process, which finds the same result
    variables["stacksync_in_process"] = False
    r, log = run(tmp_path, kube, [], variables, verbose=True, playbook=playbook, **kwargs)
    assert not r.get("failed") and not r["changed"] and r["counts"]["unchanged"] == 1, r
    assert MODULE_PROCESS + " (stacksync_in_process is false)" in log


@pytest.mark.parametrize("how", ["environment", "ansible.cfg", "discovery"])
def test_another_python_set_any_way_runs_a_module_process_and_says_how_it_was_set(tmp_path, kube, ns, how):
    kwargs, extra = interpreter_setting(tmp_path, how)
    other = "/usr/bin/python3"
    if how == "environment":
        kwargs["env"]["ANSIBLE_PYTHON_INTERPRETER"] = other
    elif how == "ansible.cfg":
        (tmp_path / "ansible.cfg").write_text(f"[defaults]\ninterpreter_python = {other}\n")
    else:  # the controller's virtualenv is not on PATH: discovery finds another Python
        kwargs["env"]["PATH"] = "/usr/bin:/bin"
        extra = dict(ansible_interpreter_python_fallback=[other])
    args = dict(name="other-" + uuid.uuid4().hex[:6], kubeconfig=kube.kubeconfig, namespace=ns, record_namespace=ns,
                resources=[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}])
    r, log = run(tmp_path, kube, [], dict(extra, args=args), verbose=True, playbook=VALIDATION_PLAYBOOK, **kwargs)
    reason = f"(the Python interpreter {other} ({HOW[how]}"
    assert MODULE_PROCESS + " " + reason in log, log[-3000:]
    if how == "discovery":
        assert r["ansible_facts"]["discovered_interpreter_python"] == other


DELEGATED_PLAYBOOK = localhost_play(module_task("stack", {"resources": "{{ resources }}"}, delegate_to="localhost"))


@pytest.mark.parametrize("pipelining", ["false", "true"])
def test_a_module_process_reads_the_manifests_from_a_file_removed_after_the_run(tmp_path, kube, client, ns, pipelining):
    remote_tmp = tmp_path / "remote-tmp"
    env = dict(ANSIBLE_REMOTE_TMP=str(remote_tmp), ANSIBLE_PIPELINING=pipelining)
    value = "pa55-" + uuid.uuid4().hex
    resources = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"pw": value}},
    ]
    variables = dict(stack="file-" + uuid.uuid4().hex[:6], ns=ns, resources=resources)
    r, log = run(tmp_path, kube, ["--diff"], variables, verbose=True, playbook=DELEGATED_PLAYBOOK, env=env)
    assert MODULE_PROCESS + " (delegated to localhost)" in log
    assert r["changed"] and r["counts"]["created"] == 2, r
    # the invocation names the file (in the task's remote temporary directory) and lists the objects it held
    assert f'"resources_file": "{remote_tmp}' in log and '"v1 Secret s"' in log
    for needle in (value, base64.b64encode(value.encode()).decode()):
        assert needle not in log and needle not in json.dumps(r)
    assert list(remote_tmp.iterdir()) == []  # removed with the module
    assert client.get(f"/api/v1/namespaces/{ns}/secrets/s")["data"]["pw"] == base64.b64encode(value.encode()).decode()

    # check mode and diff through the file: nothing written
    variables["resources"] = [dict(resources[0], data={"a": "2"})]
    r, log = run(tmp_path, kube, ["--check", "--diff"], variables, verbose=True, playbook=DELEGATED_PLAYBOOK, env=env)
    assert r["changed"] and r["counts"]["configured"] == 1 and r["counts"]["pruned"] == 1, r
    assert r["diff"] and value not in log
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/c")["data"]["a"] == "1"
    assert list(remote_tmp.iterdir()) == []


def test_resources_file_given_by_the_user_and_its_errors(tmp_path, kube, client, ns):
    path = tmp_path / "manifests.json"
    path.write_text(json.dumps([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-file"}}]))
    args = dict(name="rf-" + uuid.uuid4().hex[:6], kubeconfig=kube.kubeconfig, namespace=ns, record_namespace=ns,
                resources_file=str(path), report_unchanged=True)  # the second run lists it too, unchanged
    for in_process in (True, False):
        r, _log = run(tmp_path, kube, [], dict(args=args, stacksync_in_process=in_process), playbook=VALIDATION_PLAYBOOK)
        assert not r.get("failed") and [a["name"] for a in r["applied"]] == ["from-file"], r
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/from-file") is not None
    path.write_text('{"kind": "ConfigMap"}')
    r, _log = run(tmp_path, kube, [], dict(args=args), playbook=VALIDATION_PLAYBOOK)
    assert r["failed"] and r["msg"] == f"resources_file {path}: not a JSON list of mappings", r
    r, _log = run(tmp_path, kube, [], dict(args=dict(args, resources=[])), playbook=VALIDATION_PLAYBOOK)
    assert r["failed"] and "mutually exclusive: resources|src|resources_file" in r["msg"], r
