"""render_files.py: manifest files (YAML and JSON as kubectl reads them, vault, templates); the rest of a file's
cases are in test_render.py, through render()."""

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import render_files as F
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import render

from tests.unit.plugins.plugin_utils.test_render import write


def test_documents_of_yaml_and_json_text():
    docs = list(F.iter_yaml_documents("a: 1\n---\n---\nb: [x]\n", "f.yaml"))
    assert [(index, line, doc) for index, line, doc, _plain in docs] == [(0, 1, {"a": 1}), (1, 3, None),
                                                                           (2, 4, {"b": ["x"]})]
    assert [doc for _i, _l, doc, _p in F.iter_yaml_documents('{"a": 1} {"b": 2}', "f.json")] == [{"a": 1}, {"b": 2}]


def test_vault_data_needs_the_renders_decrypt_hook(tmp_path):
    write(tmp_path, {"s.yaml": "$ANSIBLE_VAULT;1.1;AES256\n6162\n"})
    assert F.is_vault_data(b"  $ANSIBLE_VAULT;1.1;AES256\n") and not F.is_vault_data(b"kind: x")
    with pytest.raises(F.RenderError, match="vault-encrypted but no vault secrets are available"):
        render(str(tmp_path))


def test_one_value_limit_for_the_yaml_walk_and_for_plain_values(monkeypatch):
    monkeypatch.setattr(F, "MAX_DOCUMENT_VALUES", 3)
    with pytest.raises(F.RenderError, match="expands to more than 3 values"):
        F._plain({"a": [1, 2, 3]}, F.RenderError)
    assert F._plain({"a": 1, 2: True}, F.RenderError) == {"a": 1, "2": True}


def test_a_git_lfs_pointer_says_what_it_is(tmp_path):
    """A checkout runs no filter (git-lfs's smudge included): a manifest stored in LFS is its pointer."""
    write(tmp_path, {"cm.yaml": "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 12\n"})
    with pytest.raises(F.RenderError, match=r"cm.yaml: is a Git LFS pointer: a checkout does not fetch LFS content"):
        render(str(tmp_path))


@pytest.mark.parametrize("name, text", [
    ("deploy.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n"),
    ("deploy.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n{{- include \"labels\" . }}\n"),
])
def test_a_helm_template_says_what_it_is(tmp_path, name, text):
    write(tmp_path, {name: text})
    with pytest.raises(F.RenderError, match=r"this looks like a Helm chart's Go template"):
        render(str(tmp_path))


def test_a_plain_yaml_error_has_no_helm_hint(tmp_path):
    write(tmp_path, {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n"})
    with pytest.raises(F.RenderError) as info:
        render(str(tmp_path))
    assert "Helm" not in str(info.value)
