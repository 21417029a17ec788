"""stack_action.run_in_process: no_log masking only when there is something to mask; stack_info's action with the GC paused (issue 18)."""

from ansible.module_utils.common.parameters import remove_values
from ansible_collections.stacksync.k8s.plugins.module_utils import info
from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import run_in_process, validate_args

MANIFESTS = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "web"}}
             for i in range(3)]


def _result():
    return {"changed": True, "applied": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": f"c{i}",
                                          "action": "created", "drift": None} for i in range(3)],
            "counts": {"created": 3, "pruned": 0}, "api_requests": {"PATCH": 3, "GET": 2}, "ok": False, "none": None}


def test_nothing_to_mask_returns_the_result_as_remove_values_would_without_copying_it():
    validated = validate_args(dict(name="s", resources=MANIFESTS), info.ARGUMENT_SPEC, info.MUTUALLY_EXCLUSIVE)
    returned = []

    def runner(params, warn):
        returned.append(_result())
        return returned[0]

    result = run_in_process(runner, validated.validated_parameters, validated, info.ARGUMENT_SPEC)
    assert result is returned[0]  # not walked and copied
    assert result == remove_values(dict(result), set())  # what the masking would have returned


def test_a_no_log_value_is_still_masked_throughout_the_result():
    token = "s3cr3t-token-value"
    validated = validate_args(dict(name="s", resources=MANIFESTS, api_key=token), info.ARGUMENT_SPEC,
                              info.MUTUALLY_EXCLUSIVE)

    def runner(params, warn):
        result = _result()
        result["applied"][1]["name"] = token
        result["msg"] = f"token {token}"
        return result

    result = run_in_process(runner, validated.validated_parameters, validated, info.ARGUMENT_SPEC)
    assert token not in repr(result)
    assert result["applied"][1]["name"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" and result["msg"] == "token ********"
    assert result["applied"][0]["name"] == "c0" and result["ok"] is False and result["none"] is None


def test_stack_info_action_runs_with_the_garbage_collector_paused(monkeypatch):
    import gc

    from ansible.plugins.action import ActionBase
    from ansible_collections.stacksync.k8s.plugins.action import stack_info
    from ansible_collections.stacksync.k8s.plugins.plugin_utils import stack_action

    seen = []

    def run(self, result, task_vars):
        seen.append(gc.isenabled())
        return {"changed": False}

    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(stack_action.StackAction, "_run", run)
    action = stack_info.ActionModule.__new__(stack_info.ActionModule)  # run() is all this test calls
    was = gc.isenabled()
    gc.enable()  # whatever an earlier test in this process left it at
    try:
        assert action.run(task_vars={}) == {"changed": False}
        assert seen == [False] and gc.isenabled()  # paused for the task, as for stack, then on again
    finally:
        if not was:
            gc.disable()
