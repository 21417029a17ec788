"""stack_action.py: the action code ``stack`` and ``stack_info`` share (argument validation, the in-process run)."""

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.stacksync.k8s.plugins.module_utils import info
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed
from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import (
    run_in_process,
    validate_args,
    validation_message,
    with_module_stderr,
)

MANIFESTS = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "web"}}
             for i in range(3)]


@pytest.mark.parametrize("args, error", [
    (dict(name="s", resources=MANIFESTS), None),
    (dict(name="s", src="/srv/checkout/apps", render=dict(root="/srv/checkout", exclude=["legacy"])), None),
    (dict(name="s"), None),
    (dict(name="s", resources=MANIFESTS, src="/tmp"), "parameters are mutually exclusive: resources|src"),
    (dict(name="s", src="/tmp", render=dict(bogus=1)), "bogus"),
    (dict(name="s", resources=MANIFESTS, prune=False), "Unsupported parameters for (stacksync.k8s.stack_info) module: prune"),
    (dict(resources=MANIFESTS), "missing required arguments: name"),
])
def test_stack_info_arguments_are_validated_as_the_module_validates_them(args, error):
    expected = ArgumentSpecValidator(info.ARGUMENT_SPEC, mutually_exclusive=info.MUTUALLY_EXCLUSIVE).validate(args)
    got = validate_args(args, info.ARGUMENT_SPEC, info.MUTUALLY_EXCLUSIVE)
    assert got.error_messages == expected.error_messages
    message = validation_message(got, "stacksync.k8s.stack_info")
    if error is None:
        assert message is None and got.validated_parameters == expected.validated_parameters
    else:
        assert error in message, message


def test_a_module_process_that_gave_no_result_says_why_in_its_message():
    """An interpreter that does not start: ansible-core's message says only that no JSON came back."""
    failed = {"failed": True, "msg": "Module result deserialization failed: No start of json char found",
              "module_stderr": "pyenv: python3.13: command not found\n\nThe `python3.13' command exists in these "
                               "Python versions:\n  3.13.1\n\nNote: See 'pyenv help global' for tips on allowing "
                               "both\n      python2 and python3 to be found.\n", "module_stdout": ""}
    assert with_module_stderr(failed)["msg"] == (
        "Module result deserialization failed: No start of json char found (the module process said: pyenv: "
        "python3.13: command not found / ... / Note: See 'pyenv help global' for tips on allowing both / python2 "
        "and python3 to be found.)")
    short = dict(failed, module_stderr="Traceback (most recent call last):\nImportError: no module named x\n")
    assert with_module_stderr(short)["msg"].endswith(
        "(the module process said: Traceback (most recent call last): / ImportError: no module named x)")
    assert with_module_stderr(dict(failed, module_stderr="x" * 2000))["msg"].endswith("said: ..." + "x" * 500 + ")")
    for unchanged in ({"failed": True, "msg": "apply failed"}, {"changed": True, "module_stderr": "a warning"},
                      {"failed": True, "msg": "boom: a", "module_stderr": "a"}):
        assert with_module_stderr(unchanged) == unchanged


def test_run_in_process_returns_what_the_module_would():
    token = "s3cr3t-token-value"
    args = dict(name="s", resources=MANIFESTS, api_key=token, host="https://admin:hunter2@kube.example:6443")
    validated = validate_args(args, info.ARGUMENT_SPEC, info.MUTUALLY_EXCLUSIVE)
    seen = {}

    def runner(params, warn):
        seen.update(params)
        warn(f"a warning naming {token}")
        return {"objects": [], "echo": f"token {token}, URL user info admin:hunter2"}

    result = run_in_process(runner, validated.validated_parameters, validated, info.ARGUMENT_SPEC)
    assert seen["resources"] == MANIFESTS and seen["api_key"] == token  # the run gets the real values
    assert result["changed"] is False and result["objects"] == []
    dumped = repr(result)
    assert token not in dumped and "hunter2" not in dumped, dumped  # no_log values and URL credentials masked
    assert result["warnings"] == ["a warning naming ********"]
    assert result["echo"] == "token ********, URL user info ********"
    invocation = result["invocation"]["module_args"]
    assert invocation["resources"] == ["v1 ConfigMap web/c0", "v1 ConfigMap web/c1", "v1 ConfigMap web/c2"]
    assert invocation["name"] == "s"


def test_what_other_sources_declare_is_handed_over_as_it_is_and_the_rest_made_plain():
    from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import plain_other_sources, plain_params

    objects = [["v1", "ConfigMap", "web", "a"]]
    entries = [{"stack": _tagged("b"), "source": "b-src", "earlier": True, "namespace": "", "objects": objects},
               {"stack": "c", "objects": None}]
    params = plain_params({"name": _tagged("s"), "other_sources": entries, "resources": MANIFESTS})
    (b, c) = params["other_sources"]
    assert b["objects"] is objects and type(b["stack"]) is str and b["stack"] == "b"  # the list itself, not a copy
    assert c == {"stack": "c", "objects": None} and type(params["name"]) is str and "resources" not in params
    assert plain_other_sources(["not a mapping"]) == ["not a mapping"]  # left for the engine to refuse


def test_run_in_process_reports_a_failed_run_with_its_result():
    validated = validate_args(dict(name="s"), info.ARGUMENT_SPEC, info.MUTUALLY_EXCLUSIVE)

    def runner(params, warn):
        raise RunFailed("stack 's': it broke", {"api_requests": {"GET": 2}})

    result = run_in_process(runner, validated.validated_parameters, validated, info.ARGUMENT_SPEC)
    assert result["failed"] is True and result["msg"] == "stack 's': it broke"
    assert result["api_requests"] == {"GET": 2} and result["changed"] is False and "warnings" not in result


def _tagged(value):
    """``value`` as ansible-core 2.19 hands templated values to an action (a tagged str), where it can."""
    try:
        from ansible._internal._datatag._tags import Origin
    except ImportError:  # pragma: no cover - ansible-core < 2.19: nothing is tagged
        return value
    return Origin(description="a template").tag(value)


def test_manifests_rendered_by_the_task_are_handed_over_as_they_are_and_the_rest_made_plain():
    rendered = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "web"}}]
    args = dict(name="s", resources=rendered, namespace=_tagged("web"))
    validated = validate_args(args, info.ARGUMENT_SPEC, info.MUTUALLY_EXCLUSIVE)
    seen = {}

    def runner(params, warn):
        seen.update(params)
        return {}

    run_in_process(runner, validated.validated_parameters, validated, info.ARGUMENT_SPEC, rendered=True)
    assert seen["resources"][0] is rendered[0]  # not copied again: the render gives plain values
    assert type(seen["namespace"]) is str and seen["namespace"] == "web"  # the options still made plain
    run_in_process(runner, validated.validated_parameters, validated, info.ARGUMENT_SPEC)
    assert seen["resources"] == rendered and seen["resources"][0] is not rendered[0]  # resources given: copied


def _plain_types(value):
    if isinstance(value, dict):
        return type(value) is dict and all(type(k) is str and _plain_types(v) for k, v in value.items())
    if isinstance(value, list):
        return type(value) is list and all(_plain_types(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


def test_what_the_render_gives_is_plain_values(tmp_path):
    from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import render

    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {x: 'y'}}\n"
                                     "data: {n: '1', b: 'true', t: '2024-01-01'}\n---\n"
                                     "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: ns1}}\n")
    (tmp_path / "b.json").write_text('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": "v"}}')
    (tmp_path / "c.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: &l {k: v}}\ndata:\n  <<: *l\n")
    manifests = render(str(tmp_path), template=lambda text, path: text)
    assert len(manifests) == 4 and all(_plain_types(m) for m in manifests)


# -- StackAction.run: the action plugins as ansible-core builds them, on the simulator -----------------------------
import sys  # noqa: E402

import ansible.plugins.loader as plugin_loaders  # noqa: E402
from ansible import constants as C  # noqa: E402
from ansible.config.manager import ConfigManager  # noqa: E402
from ansible.executor import module_common  # noqa: E402
from ansible.executor.interpreter_discovery import InterpreterDiscoveryRequiredError  # noqa: E402
from ansible.inventory.manager import InventoryManager  # noqa: E402
from ansible.parsing.dataloader import DataLoader  # noqa: E402
from ansible.playbook.play_context import PlayContext  # noqa: E402
from ansible.playbook.task import Task  # noqa: E402
from ansible.template import Templar  # noqa: E402
from ansible.vars.manager import VariableManager  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.action import stack as stack_plugin  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.action import stack_info as stack_info_plugin  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import prepare  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.plugin_utils import stack_action  # noqa: E402

from tests.unit.plugins.module_utils.simengine import client_of, configmap, namespace, sync, unique  # noqa: E402


def host_vars(tmp_path, inventory=None, host="localhost"):
    """The task variables ansible-core gives a task on ``host`` (the implicit localhost without an ``inventory``)."""
    loader = DataLoader()
    sources = []
    if inventory is not None:
        path = tmp_path / "inventory.ini"
        path.write_text(inventory)
        sources = [str(path)]
    inventory = InventoryManager(loader=loader, sources=sources)
    target = inventory.get_host(host) or inventory.localhost
    return loader, VariableManager(loader=loader, inventory=inventory).get_vars(host=target)


ACTIONS = {"stacksync.k8s.stack": stack_plugin.ActionModule, "stacksync.k8s.stack_info": stack_info_plugin.ActionModule}


def action(loader, module, args, task_vars=None, connection="local", **task):
    """``(ActionModule, Task)`` of a task running ``module`` with ``args``, built as ansible-core's TaskExecutor builds it
    (the class is the collection's own: the test process imported the collection without ansible-core's loader)."""
    task = Task.load(dict({"action": module, "args": args}, **task), loader=loader)
    play_context = PlayContext()
    conn = plugin_loaders.connection_loader.get(connection, play_context, "/dev/null")
    plugin = ACTIONS[module](task=task, connection=conn, play_context=play_context, loader=loader,
                             templar=Templar(loader=loader, variables=task_vars or {}), shared_loader_obj=plugin_loaders)
    return plugin, task


@pytest.fixture(scope="module")
def stack_of_three(kubesim):
    ns, stack = unique("act"), unique("s")
    client = client_of(kubesim)
    try:
        sync(client, stack, [namespace(ns), configmap("a", ns), configmap("b", ns)])
    finally:
        client.close()
    return ns, stack


def info_args(kubesim, tmp_path, stack, **more):
    return dict(dict(name=stack, kubeconfig=kubesim.kubeconfig, discovery_cache_dir=str(tmp_path / "cache")), **more)


def statuses(result):
    return dict((o["name"], o["status"]) for o in result["objects"])


def test_the_implicit_localhost_runs_the_module_in_the_controllers_process(kubesim, tmp_path, stack_of_three, monkeypatch):
    ns, stack = stack_of_three
    loader, task_vars = host_vars(tmp_path)
    plugin, _task = action(loader, "stacksync.k8s.stack_info", info_args(kubesim, tmp_path, stack,
                                                                           resources=[namespace(ns), configmap("a", ns)]),
                           task_vars)

    def no_module_process(*_a, **_kw):
        raise AssertionError("a module process was started")

    monkeypatch.setattr(plugin, "_execute_module", no_module_process)
    result = plugin.run(task_vars=task_vars)
    assert not result.get("failed"), result
    assert statuses(result) == {ns: "in_sync", "a": "in_sync", "b": "would_prune"}
    assert result["invocation"]["module_args"]["resources"] == [f"v1 Namespace {ns}", f"v1 ConfigMap {ns}/a"]
    assert "_ansible_parsed" not in result and "ansible_facts" not in result


@pytest.mark.parametrize("args, variables, message", [
    (dict(name="s", bogus=1), {}, "Unsupported parameters for (stacksync.k8s.stack_info) module: bogus"),
    (dict(name="s"), {"stacksync_in_process": "perhaps"}, "stacksync_in_process: "),
])
def test_what_the_task_cannot_run_fails_it_with_a_message(tmp_path, args, variables, message):
    loader, task_vars = host_vars(tmp_path)
    task_vars.update(variables)
    plugin, _task = action(loader, "stacksync.k8s.stack_info", args, task_vars)
    result = plugin.run(task_vars=task_vars)
    assert result["failed"] is True and message in result["msg"], result


# -- the interpreter a module process would run under: what ansible-core decides, on the same inputs -------------
#: the ways docs/performance.md lists of setting the interpreter (tests/bench/tools.py INTERPRETERS), as inventories,
#: environment and ansible.cfg: (inventory or None for the implicit localhost, environment, ansible.cfg value)
PY = sys.executable
WAYS = {
    "implicit-localhost": (None, None, None),
    "hostvar": (f"box ansible_connection=local ansible_python_interpreter={PY}\n", None, None),
    "hostvar-templated": ("box ansible_connection=local ansible_python_interpreter='{{ ansible_playbook_python }}'\n",
                          None, None),
    "env": ("box ansible_connection=local\n", PY, None),
    "cfg": ("box ansible_connection=local\n", None, PY),
    "hostvar-over-env-and-cfg": (f"box ansible_connection=local ansible_python_interpreter={PY}\n", "/env/python3",
                                 "/cfg/python3"),
    "discovery-default": ("box ansible_connection=local\n", None, None),
    "discovery-auto-silent": ("box ansible_connection=local ansible_python_interpreter=auto_silent\n", None, None),
    "discovery-cfg": ("box ansible_connection=local\n", None, "auto_legacy"),
    "other-python": ("box ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n", None, None),
}


@pytest.fixture
def configured(tmp_path, monkeypatch):
    """Make ansible-core's global config read ``ansible.cfg`` with ``interpreter_python`` (or none) and the
    environment's ``ANSIBLE_PYTHON_INTERPRETER`` (or none)."""
    def apply(env, cfg):
        monkeypatch.delenv("ANSIBLE_PYTHON_INTERPRETER", raising=False)
        if env:
            monkeypatch.setenv("ANSIBLE_PYTHON_INTERPRETER", env)
        path = tmp_path / "ansible.cfg"
        path.write_text("[defaults]\n" + (f"interpreter_python = {cfg}\n" if cfg else ""))
        monkeypatch.setattr(C, "config", ConfigManager(conf_file=str(path)))
    return apply


def ansible_cores_choice(task_vars, loader, remote_is_local=False):
    """The interpreter ansible-core's module_common._get_shebang picks, or ``("discover", mode)``."""
    try:
        _shebang, interpreter = module_common._get_shebang("/usr/bin/python", task_vars, Templar(loader=loader,
                                                           variables=task_vars), remote_is_local=remote_is_local)
    except InterpreterDiscoveryRequiredError as e:
        return "discover", e.discovery_mode
    return interpreter


@pytest.mark.parametrize("way", sorted(WAYS))
@pytest.mark.parametrize("discovered", [None, "/usr/bin/python3.9"])
def test_the_interpreter_is_the_one_ansible_core_would_run_the_module_with(tmp_path, configured, monkeypatch, way,
                                                                            discovered):
    inventory, env, cfg = WAYS[way]
    configured(env, cfg)
    loader, task_vars = host_vars(tmp_path, inventory, host="box" if inventory else "localhost")
    if discovered:
        task_vars.setdefault("ansible_facts", {})["discovered_interpreter_python"] = discovered
    expected = ansible_cores_choice(task_vars, loader)
    plugin, _task = action(loader, "stacksync.k8s.stack_info", {"name": "s"}, task_vars)
    ran = []

    def discover_interpreter(action, interpreter_name, discovery_mode, task_vars):
        ran.append(discovery_mode)
        return "/discovered/python3"

    monkeypatch.setattr("ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action.discover_interpreter",
                        discover_interpreter)
    interpreter, how = stack_action.effective_interpreter_of(plugin, task_vars)
    if isinstance(expected, tuple):  # ansible-core would run discovery first, in the mode configured
        assert ran == [expected[1] or "auto"] and interpreter == "/discovered/python3"
        assert task_vars["ansible_facts"]["discovered_interpreter_python"] == interpreter  # as a module run leaves it
        assert how.startswith("interpreter discovery")
    else:
        assert ran == [] and interpreter == expected, how
    in_process = not stack_action.module_process_reasons(plugin, task_vars)
    assert in_process is (interpreter == PY), (way, interpreter)


def test_a_connection_that_runs_modules_on_the_controller_uses_the_playbook_python_as_ansible_core_does(
        tmp_path, configured):
    configured(None, "/cfg/python3")
    loader, task_vars = host_vars(tmp_path, "box ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n",
                                  host="box")
    plugin, _task = action(loader, "stacksync.k8s.stack_info", {"name": "s"}, task_vars)
    plugin._connection._remote_is_local = True  # as network connection plugins set it
    assert stack_action.effective_interpreter_of(plugin, task_vars)[0] == ansible_cores_choice(task_vars, loader, remote_is_local=True) == PY


# -- the sources action: the engine called as a function, no action plugin loaded -------------------------------
import json as _json  # noqa: E402
import subprocess  # noqa: E402

import yaml  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.action import sources as sources_plugin  # noqa: E402

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]


class NoActionLoader:
    """ansible-core's plugin loaders, but an action plugin may not be loaded."""

    def __getattr__(self, name):
        if name == "action_loader":
            raise AssertionError("an action plugin was loaded")
        return getattr(plugin_loaders, name)


def sources_action(loader, args, task_vars, check_mode=False):
    task = Task.load({"action": "stacksync.k8s.sources", "args": args, "check_mode": check_mode}, loader=loader)
    play_context = PlayContext()
    conn = plugin_loaders.connection_loader.get("local", play_context, "/dev/null")
    return sources_plugin.ActionModule(task=task, connection=conn, play_context=play_context, loader=loader,
                                       templar=Templar(loader=loader, variables=task_vars),
                                       shared_loader_obj=NoActionLoader())


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_sources_action_calls_the_engine_itself(kubesim, tmp_path, monkeypatch, check_mode):
    ns, stack = unique("direct"), unique("s")
    work = tmp_path / "work"
    work.mkdir()
    (work / "apps.yaml").write_text("---\n".join(yaml.safe_dump(m) for m in (namespace(ns), configmap("a", ns))))
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "apps"]):
        subprocess.run([*GIT, *command], cwd=work, check=True, capture_output=True)
    loader, task_vars = host_vars(tmp_path)
    args = dict(sources=[dict(repo=f"file://{work}", stack=stack)], kubeconfig=kubesim.kubeconfig,
                cache_dir=str(tmp_path / "cache"), discovery_cache_dir=str(tmp_path / "discovery"), summary=False)
    plugin = sources_action(loader, args, task_vars, check_mode=check_mode)

    def no_module_process(*_a, **_kw):
        raise AssertionError("a module process was started")

    monkeypatch.setattr(plugin, "_execute_module", no_module_process)
    result = plugin.run(task_vars=task_vars)
    assert not result.get("failed"), result
    [entry] = result["ansible_facts"]["stacksync_results"]
    assert entry["stack"] == stack and entry["counts"]["created"] == 2, entry
    client = client_of(kubesim)
    try:
        found = client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/a")
    finally:
        client.close()
    assert (found is None) is check_mode, found  # check mode wrote nothing; the sync wrote it


def test_the_sources_action_runs_a_module_process_where_the_task_needs_one(kubesim, tmp_path, monkeypatch):
    loader, task_vars = host_vars(tmp_path)
    task_vars["stacksync_in_process"] = False
    work = tmp_path / "work"
    work.mkdir()
    (work / "apps.yaml").write_text(_json.dumps(configmap("a", "default")))
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "apps"]):
        subprocess.run([*GIT, *command], cwd=work, check=True, capture_output=True)
    stack = unique("s")
    args = dict(sources=[dict(repo=f"file://{work}", stack=stack)], kubeconfig=kubesim.kubeconfig,
                cache_dir=str(tmp_path / "cache"), summary=False)
    plugin = sources_action(loader, args, task_vars)
    started = []

    def module_process(module_name, module_args, task_vars, wrap_async):
        started.append((module_name, sorted(module_args)))
        return {"changed": False, "failed": True, "msg": "not this time"}

    monkeypatch.setattr(plugin, "_execute_module", module_process)
    monkeypatch.setattr(plugin, "_transfer_data", lambda path, data: path)
    monkeypatch.setattr(plugin, "_fixup_perms2", lambda paths, execute=False: None)
    monkeypatch.setattr(plugin, "_make_tmp_path", lambda: str(tmp_path / "remote"))
    monkeypatch.setattr(plugin, "_remove_tmp_path", lambda path: None)
    result = plugin.run(task_vars=task_vars)
    assert result["failed"] and "not this time" in result["msg"], result
    [(module, names)] = started  # the apply run failed: nothing pruned, nothing else run
    assert module == "stacksync.k8s.stack" and "resources_file" in names and "resources" not in names, names


def one_repo(tmp_path, *manifests):
    """A git repository (its file:// URL) of ``manifests``, in one file."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "apps.yaml").write_text("---\n".join(yaml.safe_dump(m) for m in manifests))
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "apps"]):
        subprocess.run([*GIT, *command], cwd=work, check=True, capture_output=True)
    return f"file://{work}"


def reads_ahead(monkeypatch, events):
    """Log the reads ahead started (``ahead``), taken by a stack run (``taken``) and closed (``closed``), and the
    checkouts (``checkout``), in ``events``."""
    start = stack_action.StackModule.prefetch

    def prefetch(self, params):
        reads = start(self, params)
        close = reads.close
        events.append(("ahead", reads))

        def closed():
            events.append(("closed", reads))
            close()

        reads.close = closed
        return reads

    checkout = sources_plugin.checkout

    def logged_checkout(*args, **kwargs):
        events.append(("checkout", None))
        return checkout(*args, **kwargs)

    run = stack_action.ModuleRuns.run

    def logged_run(self, module, args, params, validated, prefetch=None, **kwargs):
        events.append(("taken", prefetch))
        return run(self, module, args, params, validated, prefetch=prefetch, **kwargs)

    monkeypatch.setattr(stack_action.StackModule, "prefetch", prefetch)
    monkeypatch.setattr(sources_plugin, "checkout", logged_checkout)
    monkeypatch.setattr(stack_action.ModuleRuns, "run", logged_run)


def test_a_single_sources_stack_run_reads_ahead_while_it_is_checked_out_and_rendered(kubesim, tmp_path, monkeypatch):
    ns, stack = unique("ahead"), unique("s")
    loader, task_vars = host_vars(tmp_path)
    args = dict(sources=[dict(repo=one_repo(tmp_path, namespace(ns), configmap("a", ns)), stack=stack)],
                kubeconfig=kubesim.kubeconfig, cache_dir=str(tmp_path / "cache"),
                discovery_cache_dir=str(tmp_path / "discovery"), summary=False)
    for expected in ("created", "unchanged"):
        events = []
        reads_ahead(monkeypatch, events)
        result = sources_action(loader, args, task_vars).run(task_vars=task_vars)
        assert counts_of(result, expected) == [2], result
        (_, reads), _checkout, taken, closed = events  # the run closes what it took
        assert [e[0] for e in events] == ["ahead", "checkout", "taken", "closed"], events
        assert taken[1] is reads and closed[1] is reads, events
        monkeypatch.undo()


def test_reads_ahead_for_a_source_that_cannot_be_fetched_are_closed(kubesim, tmp_path, monkeypatch):
    loader, task_vars = host_vars(tmp_path)
    args = dict(sources=[dict(repo=f"file://{tmp_path}/missing", stack=unique("s"))], kubeconfig=kubesim.kubeconfig,
                cache_dir=str(tmp_path / "cache"), summary=False)
    events = []
    reads_ahead(monkeypatch, events)
    result = sources_action(loader, args, task_vars).run(task_vars=task_vars)
    assert result["failed"] and "cannot fetch" in result["msg"], result
    assert [e[0] for e in events] == ["ahead", "checkout", "closed"], events


@pytest.mark.parametrize("case", ["module process", "two sources", "absent"])
def test_no_reads_ahead_for_a_module_process_several_sources_or_a_stack_removed(kubesim, tmp_path, monkeypatch, case):
    loader, task_vars = host_vars(tmp_path)
    repo = one_repo(tmp_path, configmap("a", "default"))
    sources = [dict(repo=repo, stack=unique("s"), state="absent" if case == "absent" else "present")]
    if case == "two sources":
        sources.append(dict(repo=repo, stack=unique("t")))
    if case == "module process":
        task_vars["stacksync_in_process"] = False
    args = dict(sources=sources, kubeconfig=kubesim.kubeconfig, cache_dir=str(tmp_path / "cache"), summary=False)
    plugin = sources_action(loader, args, task_vars)
    monkeypatch.setattr(plugin, "_execute_module", lambda **_kw: {"changed": False, "failed": True, "msg": "no"})
    events = []
    reads_ahead(monkeypatch, events)
    plugin.run(task_vars=task_vars)
    assert "ahead" not in [e[0] for e in events] and all(e[1] is None for e in events if e[0] == "taken"), events


def test_reads_ahead_are_taken_only_by_a_run_that_reads_the_same():
    params = dict(name="s", record_namespace="kube-system", discovery_cache_dir="/d", concurrency=16, state="present",
                  kubeconfig="/k", resources=[{"kind": "ConfigMap"}])
    same = sources_plugin._reads_key(params)
    assert sources_plugin._reads_key(dict(params, resources=[], commit="c", phase="apply")) == same
    for changed in (dict(name="t"), dict(record_namespace="r"), dict(discovery_cache_dir=None), dict(concurrency=4),
                    dict(kubeconfig="/other"), dict(context="c"), dict(state="absent")):
        assert sources_plugin._reads_key(dict(params, **changed)) != same, changed


def four_sources(tmp_path, kubeconfig, prefix):
    """The arguments of a sources task of 4 sources of one repository: a Namespace, and a ConfigMap in each of 3
    directories."""
    work = tmp_path / "work"
    ns = unique(prefix)
    for i in range(3):
        (work / f"s{i}").mkdir(parents=True)
        (work / f"s{i}" / "cm.yaml").write_text(yaml.safe_dump(configmap(f"c{i}", ns)))
    (work / "ns.yaml").write_text(yaml.safe_dump(namespace(ns)))
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "apps"]):
        subprocess.run([*GIT, *command], cwd=work, check=True, capture_output=True)
    sources = [dict(repo=f"file://{work}", path=".", include=["ns.yaml"], stack=unique("ns"))]
    sources += [dict(repo=f"file://{work}", path=f"s{i}", stack=unique(f"s{i}")) for i in range(3)]
    return dict(sources=sources, kubeconfig=kubeconfig, summary=False, cache_dir=str(tmp_path / "cache"))


def counts_of(result, what):
    assert not result.get("failed"), result
    return [e["counts"][what] for e in result["ansible_facts"]["stacksync_results"]]


def src_of(tmp_path, ns):
    """A ``src`` directory: the Namespace ``ns`` and a ConfigMap ``a`` in it."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "ns.yaml").write_text(yaml.safe_dump(namespace(ns)))
    (src / "a.yaml").write_text(yaml.safe_dump(configmap("a", ns)))
    return src


def payloads_made(monkeypatch):
    """The names of the objects whose checksum payload prepare encodes, as it does."""
    made = []
    real = prepare.checksum_payload
    monkeypatch.setattr(prepare, "checksum_payload", lambda m, oid: made.append(oid.name) or real(m, oid))
    return made


def test_the_checksums_of_a_kept_render_are_made_once_and_drift_is_still_found(kubesim, tmp_path, monkeypatch):
    ns, stack = unique("sums"), unique("s")
    src = src_of(tmp_path, ns)
    made = payloads_made(monkeypatch)
    loader, task_vars = host_vars(tmp_path)
    cache = tmp_path / "cache"

    def run():
        del made[:]
        args = dict(name=stack, kubeconfig=kubesim.kubeconfig, src=str(src), discovery_cache_dir=str(cache))
        result = action(loader, "stacksync.k8s.stack", args, task_vars)[0].run(task_vars=task_vars)
        assert not result.get("failed"), result
        return result["changed"], sorted(made)

    assert run() == (True, sorted([ns, "a"]))  # rendered: no checksums kept (only a render read from where it is kept has)
    assert run() == (False, sorted([ns, "a"]))  # read from the render kept: made, and kept beside it
    assert len(list(cache.glob("renders/*/stacksync-checksums-*.json"))) == 1
    assert run() == (False, [])  # taken: nothing encoded or hashed again
    client = client_of(kubesim)
    path = f"/api/v1/namespaces/{ns}/configmaps/a"
    client.request("PATCH", path, body={"data": {"k": "edited"}}, content_type="application/merge-patch+json")
    assert run() == (True, [])  # someone changed a field of git's: found (its owner changed) and reverted
    assert client.get(path)["data"] == {"k": "a"}
    (src / "a.yaml").write_text(yaml.safe_dump(configmap("a", ns, k="changed")))
    assert run() == (True, sorted([ns, "a"]))  # another render: its own checksums
    assert client.get(path)["data"] == {"k": "changed"}
    assert run() == (False, sorted([ns, "a"])) and run() == (False, [])
    assert len(list(cache.glob("renders/*/stacksync-checksums-*.json"))) == 1  # those of the render replaced


def test_a_sources_run_parses_what_each_source_declares_once(kubesim, tmp_path, monkeypatch):
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine import run_sources

    args = four_sources(tmp_path, kubesim.kubeconfig, "many")
    parsed = []
    real = run_sources._Declared
    monkeypatch.setattr(run_sources, "_Declared", lambda *a: parsed.append(a[0]) or real(*a))
    loader, task_vars = host_vars(tmp_path)
    assert counts_of(sources_action(loader, args, task_vars).run(task_vars=task_vars), "created") == [1, 1, 1, 1]
    # 4 sources, each run (apply, prune) told what the 3 others declare: 4 lists, each parsed once, not 24 times
    assert len(parsed) == 4 and len(set(map(id, parsed))) == 4, parsed


def test_the_stacks_of_a_sources_run_list_each_kind_once(kubesim, tmp_path):
    args = four_sources(tmp_path, kubesim.kubeconfig, "shared")
    loader, task_vars = host_vars(tmp_path)
    assert counts_of(sources_action(loader, args, task_vars).run(task_vars=task_vars), "created") == [1, 1, 1, 1]
    again = sources_action(loader, args, task_vars)
    assert counts_of(again.run(task_vars=task_vars), "unchanged") == [1, 1, 1, 1]
    # 4 stacks, each run twice (apply, prune): the Namespaces and the ConfigMaps listed once each for all of them
    assert (again._shared.listed, again._shared.dropped) == (2, 0)


def test_the_checksums_of_a_sources_kept_render_are_made_once(kubesim, tmp_path, monkeypatch):
    args = four_sources(tmp_path, kubesim.kubeconfig, "sums")
    made = payloads_made(monkeypatch)
    loader, task_vars = host_vars(tmp_path)
    rounds = []
    for _ in range(3):
        del made[:]
        result = sources_action(loader, args, task_vars).run(task_vars=task_vars)
        rounds.append((counts_of(result, "unchanged"), len(made)))
    # rendered (nothing kept), then read from the render kept (made and kept), then taken: 4 sources of one checkout,
    # each object's made once a run (its stack's apply and prune runs share its manifests)
    assert rounds == [([0, 0, 0, 0], 4), ([1, 1, 1, 1], 4), ([1, 1, 1, 1], 0)]


def test_the_render_of_a_src_is_kept_while_its_files_stay_the_same(kubesim, tmp_path, monkeypatch):
    ns, stack = unique("kept"), unique("s")
    src = src_of(tmp_path, ns)
    rendered, checked = [], []
    real = stack_action.render_terms
    monkeypatch.setattr(stack_action, "render_terms", lambda *a, **kw: rendered.append(a[0]) or real(*a, **kw))
    validate = prepare.validate_manifest
    monkeypatch.setattr(prepare, "validate_manifest", lambda m, i=None: checked.append(i) or validate(m, i))
    loader, task_vars = host_vars(tmp_path)

    def run(**more):
        args = dict(dict(name=stack, kubeconfig=kubesim.kubeconfig, src=str(src),
                         discovery_cache_dir=str(tmp_path / "cache")), **more)
        result = action(loader, "stacksync.k8s.stack", args, task_vars)[0].run(task_vars=task_vars)
        assert not result.get("failed"), result
        return result["changed"]

    assert run() and len(rendered) == 1
    assert not run() and len(rendered) == 1  # read from the render kept
    assert checked == []  # the render checked each manifest: the engine does not again
    (src / "a.yaml").write_text(yaml.safe_dump(configmap("a", ns, k="changed")))
    assert run() and len(rendered) == 2  # its bytes changed: rendered again, and applied
    assert client_of(kubesim).get(f"/api/v1/namespaces/{ns}/configmaps/a")["data"] == {"k": "changed"}
    assert not run(discovery_cache_dir="") and len(rendered) == 3  # no cache directory: rendered every run
    (src / "b.yaml.j2").write_text(yaml.safe_dump(configmap("b", ns)))
    assert run() and not run() and len(rendered) == 5  # a template: rendered every run
