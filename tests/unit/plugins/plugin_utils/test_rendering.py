"""rendering.py: what the manifests lookup does, as a function the stack and sources actions call directly."""

import inspect

import pytest
import yaml
from ansible.errors import AnsibleError
from ansible_collections.stacksync.k8s.plugins.action import sources as sources_action
from ansible_collections.stacksync.k8s.plugins.lookup import manifests as lookup_module
from ansible_collections.stacksync.k8s.plugins.plugin_utils import rendering as R
from ansible_collections.stacksync.k8s.plugins.plugin_utils import stack_action
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import RenderError

from tests.unit.plugins.lookup.test_manifests import CM, encrypt, inline_vault, make_lookup, repo  # noqa: F401 - the fixture
from tests.unit.plugins.plugin_utils.test_render import write

VARIABLES = {"app_name": "web", "replicas": 2, "more_data": {"k": "v"}}


def test_the_defaults_are_the_lookups_documented_ones():
    documented = yaml.safe_load(lookup_module.DOCUMENTATION)["options"]
    documented.pop("_terms")
    assert dict((name, option.get("default")) for name, option in documented.items()) == R.DEFAULTS


@pytest.mark.parametrize("options", [
    dict(template_vars={"extra": "yes"}, trusted=True),
    dict(include=["apps/*.yaml"], exclude=["apps/secret.yaml"], source_annotation=False, vault_id=["default"]),
    dict(recursive=False),
    dict(vault_id=["default"], template_vars=dict(VARIABLES, ns="apps")),  # the sandbox: template_vars only
])
def test_the_function_renders_what_the_lookup_renders(repo, options):  # noqa: F811 - the fixture
    lookup, variables = make_lookup(repo.parent, VARIABLES)
    expected = lookup.run([str(repo)], variables, **options)
    got = R.render_terms([str(repo)], variables, lookup._loader, lookup._templar, **options)
    assert got == expected and got


def test_an_option_given_as_none_takes_its_default(repo):  # noqa: F811 - the fixture
    lookup, variables = make_lookup(repo.parent, VARIABLES)
    with_none = R.render_terms([str(repo)], variables, lookup._loader, lookup._templar, include=None, exclude=None,
                               template_vars=None, vault_id=["default"], root=None, trusted=True)
    assert with_none == R.render_terms([str(repo)], variables, lookup._loader, lookup._templar, vault_id=["default"],
                                       trusted=True)
    assert [m["metadata"]["name"] for m in with_none] == ["web", "inline", "whole", "demo"]
    with pytest.raises(TypeError, match=r"unknown rendering option.*: bogus"):
        R.render_terms([str(repo)], variables, lookup._loader, lookup._templar, bogus=1)


def test_errors_name_the_file_and_vault_ids_are_bound(tmp_path):
    write(tmp_path, {"t/cm.yaml.j2": CM.format(name="{{ nope }}"), "s/secret.yaml": encrypt("a: 1\n")})
    lookup, variables = make_lookup(tmp_path)
    with pytest.raises(AnsibleError, match=r"^stacksync.k8s.manifests: cm.yaml.j2 \(line 4\): template error"):
        R.render_terms(["t"], variables, lookup._loader, lookup._templar)
    with pytest.raises(AnsibleError, match="none is named"):
        R.render_terms(["s"], variables, lookup._loader, lookup._templar)
    with pytest.raises(AnsibleError, match=r"the play has no vault secret of the vault id\(s\) in vault_id \(prod\)"):
        R.render_terms(["s"], variables, lookup._loader, lookup._templar, vault_id=["prod"])
    with pytest.raises(AnsibleError, match="refused unless trusted is true"):
        R.render_terms(["t"], variables, lookup._loader, lookup._templar, kustomize_command=["kustomize", "build",
                                                                                               "--load-restrictor",
                                                                                               "LoadRestrictionsNone"])


def test_the_vault_data_of_an_untrusted_render_has_a_cpu_budget(tmp_path, monkeypatch):
    """Each !vault value costs a key derivation: a repository of many of them fails its render once they cost more
    than VAULT_CPU_SECONDS, instead of holding the controller's CPU; within it they decrypt."""
    values = "".join(inline_vault(f"k{i}", f"v{i}") for i in range(3))
    write(tmp_path, {"s/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n" + values})
    lookup, variables = make_lookup(tmp_path)
    got = R.render_terms(["s"], variables, lookup._loader, lookup._templar, vault_id=["default"])
    assert got[0]["data"] == {"k0": "v0", "k1": "v1", "k2": "v2"}
    monkeypatch.setattr(R, "VAULT_CPU_SECONDS", 0)
    with pytest.raises(AnsibleError, match=r"cm.yaml.*took more than 0 s of CPU time \(1 decrypted so far"):
        R.render_terms(["s"], variables, lookup._loader, lookup._templar, vault_id=["default"])


def test_messages_and_vault_headers():
    assert R.error_message(RenderError("bad", path="a.yaml"), "/srv/repo", None).endswith("(in /srv/repo)")
    in_repo = R.error_message(RenderError("bad", path="a.yaml"), "/cache/abc/repo", "/cache/abc")
    assert in_repo == "stacksync.k8s.manifests: a.yaml: bad"  # named by its path in the repository, never the cache
    assert R.encrypted_for(b"$ANSIBLE_VAULT;1.2;AES256;prod\n0000") == "prod"
    assert R.encrypted_for(b"$ANSIBLE_VAULT;1.1;AES256\n0000") is None


def test_the_actions_render_without_loading_the_lookup():
    for module in (stack_action, sources_action):
        source = inspect.getsource(module)
        assert "render_terms(" in source and "lookup_loader" not in source, module.__name__
