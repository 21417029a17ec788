"""stack_action.py: the action code ``stack`` and ``stack_info`` share (argument validation, the in-process run)."""

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.stacksync.k8s.plugins.module_utils import info
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed
from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import (
    run_in_process,
    validate_args,
    validation_message,
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
