"""options.py: the options of one run, validated once (``StackOptions``), and made from the module's parameters."""

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.stacksync.k8s.plugins.module_utils import info, runner
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import spoken
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import (
    DEFAULTS,
    OptionError,
    StackOptions,
    options_from_params,
)


def test_every_option_has_its_default():
    opts = StackOptions("web")
    for name, default in DEFAULTS.items():
        if name not in ("concurrency",):
            assert getattr(opts, name) == default, name
    assert opts.stack == "web" and opts.policy is None and opts.wait_rules == {}
    assert [(p.name, p.prefix) for p in opts.takeover] == [("kubectl", True), ("before-first-apply", False),
                                                          ("OpenAPI-Generator", False)]


@pytest.mark.parametrize("stack", ["", "a/b", "-web", "x" * 64, None, 3])
def test_a_stack_name_must_be_a_label_value(stack):
    with pytest.raises(OptionError, match="is not a valid label value"):
        StackOptions(stack)


def test_an_unknown_option_is_a_programming_error():
    with pytest.raises(TypeError, match=r"unknown option.*: bogus, other"):
        StackOptions("web", other=1, bogus=2)


@pytest.mark.parametrize("options, message", [
    (dict(max_prune="lots"), "max_prune"),
    (dict(max_prune="120%"), "max_prune"),
    (dict(takeover_managers=[""]), "takeover_managers entries must be non-empty strings"),
    (dict(takeover_managers=["helm:Patch"]), "the operation after ':' must be Update or Apply"),
    (dict(confinement={"allowed_namespaces": "team-a"}), "allowed_namespaces"),
])
def test_values_the_run_cannot_use_are_option_errors(options, message):
    with pytest.raises(OptionError, match=message):
        StackOptions("web", **options)


@pytest.mark.parametrize("phase, applying, writes_record", [("all", True, True), ("apply", True, False),
                                                            ("prune", False, True)])
def test_the_phase_says_whether_the_run_applies_and_writes_the_record(phase, applying, writes_record):
    opts = StackOptions("web", phase=phase)
    assert (opts.applying, opts.writes_record) == (applying, writes_record)


def test_concurrency_is_at_least_one_and_an_empty_namespace_is_default():
    assert StackOptions("web", concurrency=0).concurrency == 1
    assert StackOptions("web", concurrency="3").concurrency == 3
    assert StackOptions("web", namespace="").namespace == "default"


def stack_params(**args):
    result = ArgumentSpecValidator(runner.ARGUMENT_SPEC, mutually_exclusive=runner.MUTUALLY_EXCLUSIVE).validate(
        dict(dict(name="web"), **args))
    assert not result.error_messages
    return result.validated_parameters


def test_options_from_the_modules_defaults_are_the_engines_defaults():
    opts = options_from_params(stack_params())
    for name in ("prune", "phase", "propagation_policy", "allow_empty", "field_manager", "record_namespace",
                 "concurrency", "wait", "wait_timeout", "full_prune_scan", "force_conflicts", "fail_on_shared"):
        assert getattr(opts, name) == DEFAULTS[name], name
    assert opts.namespace == "default" and opts.check_mode is False and opts.diff is False
    assert opts.discovery_cache_dir.endswith("/.kube/cache/stacksync")  # the module's default, expanded


def test_options_from_params_carry_the_modules_names_into_the_engines():
    opts = options_from_params(stack_params(
        wait_condition=[{"kind": "Job", "expression": "status.succeeded > `0`"}], wait_timeout=42, max_prune="5",
        takeover_managers=["helm"], record_namespaces=["team-b"], source="git-a", commit="abc",
        allowed_namespaces=["team-a"], namespace=None), context_namespace="from-kubeconfig", check_mode=True, diff=True,
        diff_full=False)
    assert opts.wait_conditions == [{"kind": "Job", "group": None, "expression": "status.succeeded > `0`"}]
    assert len(opts.wait_rules) == 1
    assert opts.lock_timeout == 42  # the Lease is waited for as long as the objects
    assert (opts.max_prune, opts.record_namespaces, opts.source, opts.commit) == ("5", ["team-b"], "git-a", "abc")
    assert opts.namespace == "from-kubeconfig"  # the kubeconfig context's namespace when the task sets none
    assert (opts.check_mode, opts.diff, opts.diff_full) == (True, True, False)
    assert opts.policy is not None and opts.confinement["allowed_namespaces"] == ["team-a"]
    assert options_from_params(stack_params(namespace="apps"), "from-kubeconfig").namespace == "apps"


def test_stack_info_parameters_make_options_too():
    params = ArgumentSpecValidator(info.ARGUMENT_SPEC).validate(dict(name="web", full_prune_scan=True)).validated_parameters
    opts = options_from_params(params, check_mode=True)
    assert opts.full_prune_scan is True and opts.check_mode is True and opts.prune is True


@pytest.mark.parametrize("given, seconds", [(42, 42), ("42", 42), ("90s", 90), ("5m", 300), ("1h30m", 5400),
                                            ("2d", 172800), (0, 0), (0.2, 0.2)])
def test_wait_timeout_is_a_number_of_seconds_or_a_duration(given, seconds):
    """Flux writes ``timeout: 5m``; prune_grace takes durations: wait_timeout does too, numbers as before."""
    opts = options_from_params(stack_params(wait_timeout=given))
    assert (opts.wait_timeout, opts.lock_timeout) == (seconds, seconds)


@pytest.mark.parametrize("given", ["soon", "5 minutes", "-3", -3, True, "1.5h"])
def test_a_wait_timeout_that_is_neither_fails_naming_the_option_in_the_callers_words(given):
    with pytest.raises(OptionError, match=r"^wait_timeout must be a duration such as 90s, 15m, 1h or 2d .* or a number "
                                          r"of seconds, got "):
        options_from_params(stack_params(wait_timeout=given))
    with spoken({"wait_timeout": "stacksync_wait_timeout"}), pytest.raises(OptionError, match=r"^stacksync_wait_timeout "):
        options_from_params(stack_params(wait_timeout=given))
