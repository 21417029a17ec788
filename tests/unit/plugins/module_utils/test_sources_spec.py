"""sources_spec.py: the argument spec of ``stacksync.k8s.sources``: the stack options passed through to each source as
they are (without defaults of their own, so each stack run gets the stack module's), and its documentation."""

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.stacksync.k8s.plugins.module_utils import sources_spec as S
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import ARGUMENT_SPEC as STACK_SPEC
from ansible_collections.stacksync.k8s.plugins.modules import sources

from .docspec import differences, documented_options


def test_every_stack_option_is_passed_through_but_each_sources_own():
    own = {"name", "resources", "resources_file", "src", "render", "state", "phase", "prune", "namespace", "commit",
           "source", "other_sources", "emit_plan", "plan_file", "approved_plan",
           "report_unchanged"}  # a source's entry lists the objects written whatever the stack's result lists
    assert set(S.PASSTHROUGH) == set(STACK_SPEC) - own
    for name in S.PASSTHROUGH:
        assert "default" not in S.ARGUMENT_SPEC[name], name  # the stack module's default applies when unset
        assert dict(S.ARGUMENT_SPEC[name], default=STACK_SPEC[name].get("default")) == dict(
            STACK_SPEC[name], default=STACK_SPEC[name].get("default")), name


def test_a_passed_through_option_left_unset_stays_unset():
    result = ArgumentSpecValidator(S.ARGUMENT_SPEC).validate({"sources": [{"repo": "file:///srv/apps.git"}]})
    assert not result.error_messages
    params = result.validated_parameters
    assert all(params[name] is None for name in S.PASSTHROUGH)
    assert (params["version"], params["path"], params["prune"], params["summary"]) == ("HEAD", ".", True, True)
    assert params["sources"][0]["prune"] is None and params["sources"][0]["state"] is None


def test_a_source_takes_only_its_documented_keys():
    result = ArgumentSpecValidator(S.ARGUMENT_SPEC).validate({"sources": [{"repo": "file:///a", "bogus": 1}]})
    assert result.error_messages and "bogus" in result.error_messages[0]


def test_the_documentation_states_the_spec_and_every_key_of_a_source():
    documented = documented_options(sources)
    assert differences(documented, S.ARGUMENT_SPEC) == []
    assert set(documented["sources"]["suboptions"]) == set(S.SOURCE_SPEC)
