"""render_kustomize.py: kustomization directories (the kustomize runs themselves are in test_kustomize.py and
test_render.py, through render())."""

from ansible_collections.stacksync.k8s.plugins.plugin_utils import render_kustomize as K


def test_the_default_command_keeps_kustomizations_in_their_directory(monkeypatch):
    monkeypatch.setattr(K.shutil, "which", lambda name: "/bin/" + name if name == "kubectl" else None)
    assert K.default_kustomize_command() == ["/bin/kubectl", "kustomize", K.ROOT_ONLY]
    monkeypatch.setattr(K.shutil, "which", lambda name: None)
    assert K.default_kustomize_command() is None


def test_flags_that_relax_the_confinement_are_named():
    assert K.relaxing_flags(["kustomize", "build", "--load-restrictor=LoadRestrictionsNone", "--enable-helm"]) == [
        "--load-restrictor=LoadRestrictionsNone", "--enable-helm"]
    assert K.relaxing_flags(None) == [] and K.relaxing_flags(["kustomize", "build", K.ROOT_ONLY]) == []


def test_kustomizes_message_in_plain_words():
    stderr = ('# Warning: \'bases\' is deprecated\nE1203 14:20:16.401638   26798 run.go:72] "command failed" '
              'err="accumulating resources: /cache/abc/apps/missing.yaml: no such file"\n')
    assert K.kustomize_message(stderr, "/cache/abc") == "accumulating resources: apps/missing.yaml: no such file"
    assert K.kustomize_message("Error: boom\nError: boom\n") == "boom" and K.kustomize_message("") == "no message"
