"""checkout_spec.py: the argument spec of ``stacksync.k8s.checkout`` (an action plugin; the module file documents it):
what it validates, and that the documentation says the same, option by option."""

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.stacksync.k8s.plugins.module_utils.checkout_spec import ARGUMENT_SPEC
from ansible_collections.stacksync.k8s.plugins.modules import checkout

from .docspec import differences, documented_options


def test_the_documentation_states_the_spec():
    assert differences(documented_options(checkout), ARGUMENT_SPEC) == []


def test_defaults_and_the_required_repository():
    result = ArgumentSpecValidator(ARGUMENT_SPEC).validate({"repo": "file:///srv/git/apps.git"})
    assert not result.error_messages
    params = result.validated_parameters
    assert (params["version"], params["path"], params["stack"]) == ("HEAD", "", "")
    assert params["cache_dir"].endswith("/.cache/stacksync") and not params["cache_dir"].startswith("~")
    assert ArgumentSpecValidator(ARGUMENT_SPEC).validate({}).error_messages == ["missing required arguments: repo"]


@pytest.mark.parametrize("url", ["https://user:s3cret@git.example.com/apps.git", "file:///srv/apps.git"])
def test_the_repository_url_is_never_logged(url):
    result = ArgumentSpecValidator(ARGUMENT_SPEC).validate({"repo": url})
    assert url in result._no_log_values  # it may carry a token
