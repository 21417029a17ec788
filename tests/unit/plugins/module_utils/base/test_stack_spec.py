"""stack_spec.py: the stack options declared once; the modules' documentation and the role's argument spec say what
the table says, and the specs, the engine's defaults and the parameters-to-options step are made from it."""

import re
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.stacksync.k8s.plugins.module_utils import info, runner
from ansible_collections.stacksync.k8s.plugins.module_utils.base import stack_spec as T
from ansible_collections.stacksync.k8s.plugins.module_utils.base import vocabulary
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import POLICY_SPEC
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import DEFAULTS, options_from_params
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan_file import document
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import AUTH_ARG_SPEC
from ansible_collections.stacksync.k8s.plugins.modules import stack, stack_info

from ..docspec import differences, documented_options

ROLE = Path(__file__).resolve().parents[5] / "roles" / "sync"


def _role_options():
    return yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]


def _rows_as_specs(rows, info_spec=False):
    return dict((o.name, o.spec(without_default=info_spec and o.name == "resources")) for o in rows)


@pytest.mark.parametrize("module, rows, info_spec", [
    (stack, T.OPTIONS, False), (stack_info, [o for o in T.OPTIONS if o.info], True)])
def test_the_modules_document_the_tables_options_with_its_types_defaults_and_choices(module, rows, info_spec):
    documented = documented_options(module)
    own = dict((k, v) for k, v in documented.items() if k not in AUTH_ARG_SPEC and k not in POLICY_SPEC)
    assert differences(own, _rows_as_specs(rows, info_spec)) == []
    assert set(documented) == set(own) | set(AUTH_ARG_SPEC) | set(POLICY_SPEC)  # and the shared specs, whole
    assert differences(documented, runner.ARGUMENT_SPEC if module is stack else info.ARGUMENT_SPEC) == []


def test_a_documented_default_that_is_not_the_tables_is_found():
    documented = documented_options(stack)
    documented["record_namespace"] = dict(documented["record_namespace"], default="stacksync")
    documented["phase"] = dict(documented["phase"], choices=["all", "apply"])
    assert differences(documented, runner.ARGUMENT_SPEC) == [
        ("phase", "choices: documented ['all', 'apply'], spec ['all', 'apply', 'prune']"),
        ("record_namespace", "default: documented 'stacksync', spec 'kube-system'")]


def test_the_module_specs_are_the_table_and_the_shared_specs():
    stack_args, info_args = runner.ARGUMENT_SPEC, info.ARGUMENT_SPEC
    assert stack_args == dict(T.stack_spec(), **AUTH_ARG_SPEC, **POLICY_SPEC)
    assert info_args == dict(T.info_spec(), **AUTH_ARG_SPEC, **POLICY_SPEC)
    assert "default" not in info.ARGUMENT_SPEC["resources"] and runner.ARGUMENT_SPEC["resources"]["default"] == []
    assert T.stack_spec()["resources"]["default"] is not T.stack_spec()["resources"]["default"]  # no shared list


def test_each_role_variable_takes_what_the_module_option_takes():
    variables = _role_options()
    for name, variable in T.role_variables().items():
        row, var = T.BY_NAME[name], variables.get(variable)
        assert var is not None, variable
        assert var.get("type", "str") == row.type, variable
        assert sorted(var.get("choices") or []) == sorted(row.choices or []), variable
        assert var.get("elements") == row.elements, variable
        # unset, the module's default applies (the role omits it); or the role states the same default
        assert var.get("default") in (None, row.default), variable


def test_the_role_passes_each_variable_to_its_option():
    tasks = (ROLE / "tasks" / "main.yml").read_text()
    for name, variable in T.role_variables().items():
        assert re.search(rf'^ +{name}: "{{{{ {variable} \|', tasks, re.M), (name, variable)
    assert set(T.role_variables()) <= set(vocabulary.ROLE_OPTIONS)
    assert vocabulary.task_option("role", "max_prune") == T.BY_NAME["max_prune"].role


def test_every_option_says_what_it_is_and_engine_names_are_only_given_when_other():
    for row in T.OPTIONS:
        assert row.doc and "\n" not in row.doc, row.name
        assert row.engine in (T.ENGINE, T.NOT_ENGINE) or row.engine != row.name, row.name
    assert [o.name for o in T.OPTIONS if o.engine not in (T.ENGINE, T.NOT_ENGINE)] == ["wait_condition"]


def test_the_engines_defaults_are_the_modules_but_where_the_table_says_otherwise():
    for row in T.OPTIONS:
        if row.attr:
            expected = row.default if row.engine_default is T.MODULE_DEFAULT else row.engine_default
            assert DEFAULTS[row.attr] == expected, row.name
    assert (DEFAULTS["namespace"], DEFAULTS["discovery_cache_dir"]) == ("default", None)  # none without the module
    assert DEFAULTS["lock_timeout"] == T.BY_NAME["wait_timeout"].default


#: a value other than the default, of the option's type, for each engine option
OTHER = dict(phase="apply", prune=False, allow_empty=True, propagation_policy="Orphan", namespace="apps",
             field_manager="me", takeover_managers=["helm"], force_conflicts=False, fail_on_shared=True,
             recreate_on_immutable=True, record_namespace="team-a", record_namespaces=["team-b"], commit="abc",
             wait=True, wait_timeout=7, wait_condition=[{"kind": "Job", "group": None, "expression": "a"}],
             concurrency=3, full_prune_scan=True, max_prune="4", approved_plan=document({"web": {}}), source="git-a",
             other_sources=[], discovery_cache_dir="/tmp/nowhere-cache", prune_grace="1h", emit_plan=True)


def test_every_engine_option_of_the_table_reaches_the_engine_under_its_name():
    assert set(OTHER) == set(o.name for o in T.OPTIONS if o.attr)
    result = ArgumentSpecValidator(runner.ARGUMENT_SPEC).validate(dict(OTHER, name="web"))
    assert not result.error_messages
    opts = options_from_params(result.validated_parameters)
    for name, value in OTHER.items():
        assert getattr(opts, T.BY_NAME[name].attr) == value, name
    assert opts.lock_timeout == 7 and opts.approval is not None and opts.approval.stack == "web"
