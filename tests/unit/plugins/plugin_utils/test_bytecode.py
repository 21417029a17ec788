"""bytecode.py: the collection's controller-side modules imported by the standard source loader (bytecode kept in
``__pycache__``) instead of compiled from source by ansible-core's collection loader in every process."""

import importlib.machinery
import json
import os
import subprocess
import sys
import textwrap

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import bytecode as bc

from tests.conftest import COLLECTIONS_ROOT

PKG = "ansible_collections.stacksync.k8s.plugins.module_utils.zz_probe"


def test_module_file_finds_a_plain_module_in_its_package_path(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "mod.py").write_text("X = 1\n")
    assert bc.module_file(PKG + ".mod", [str(tmp_path / "a"), str(tmp_path / "b")]) == str(tmp_path / "b" / "mod.py")
    assert bc.module_file(PKG + ".missing", [str(tmp_path / "b")]) is None
    assert bc.module_file(PKG + ".mod", [None, b"bytes", str(tmp_path / "b")]) == str(tmp_path / "b" / "mod.py")


def test_module_file_leaves_a_package_to_the_other_finders(tmp_path):
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod.py").write_text("X = 1\n")  # a directory of the name wins, as it does for Python's own finder
    assert bc.module_file(PKG + ".mod", [str(tmp_path)]) is None


@pytest.mark.parametrize("name", [
    "ansible_collections.other.k8s.plugins.module_utils.mod",  # another collection
    "ansible_collections.stacksync.k8s.plugins.action.mod",  # a plugin: ansible-core's plugin loader loads it
    "ansible_collections.stacksync.k8s.plugins.module_utilsx.mod",
    "json",
])
def test_finder_ignores_other_names(tmp_path, name):
    (tmp_path / "mod.py").write_text("X = 1\n")
    assert bc.CachedSourceFinder().find_spec(name, [str(tmp_path)]) is None


def test_finder_needs_a_package_path(tmp_path):
    assert bc.CachedSourceFinder().find_spec(PKG, None) is None


@pytest.mark.parametrize("prefix", bc.PREFIXES)
def test_finder_gives_the_source_loader_of_the_file(tmp_path, prefix):
    (tmp_path / "mod.py").write_text("X = 1\n")
    spec = bc.CachedSourceFinder().find_spec(prefix + "mod", [str(tmp_path)])
    assert isinstance(spec.loader, importlib.machinery.SourceFileLoader)
    assert spec.origin == str(tmp_path / "mod.py")
    assert spec.name == prefix + "mod"
    assert spec.cached.endswith(".pyc")


class _AnsibleCollectionFinder:  # the name of ansible-core's finder, as install() finds it
    def find_spec(self, fullname, path=None, target=None):
        return None


def test_install_goes_just_before_ansible_cores_finder_once():
    first, ansible = object(), _AnsibleCollectionFinder()
    meta_path = [first, ansible, object()]
    assert bc.install(meta_path) is True
    assert meta_path[0] is first and isinstance(meta_path[1], bc.CachedSourceFinder) and meta_path[2] is ansible
    assert bc.install(meta_path) is True
    assert sum(isinstance(f, bc.CachedSourceFinder) for f in meta_path) == 1


def test_install_nothing_without_ansible_cores_finder():
    meta_path = [object()]
    assert bc.install(meta_path) is False
    assert len(meta_path) == 1


def test_import_through_the_finder_keeps_the_bytecode(tmp_path, monkeypatch):
    """An import through the finder writes the module's bytecode where Python would (here a pycache prefix), and
    not when writing bytecode is turned off."""
    pkg = tmp_path / "zz_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("VALUE = 41 + 1\n")
    prefix = tmp_path / "pycache"
    finder = bc.CachedSourceFinder(prefixes=("zz_probe.",))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    for written in (False, True):
        monkeypatch.setattr(sys, "dont_write_bytecode", not written)
        for name in ("zz_probe.mod", "zz_probe"):
            sys.modules.pop(name, None)
        module = __import__("zz_probe.mod", fromlist=["VALUE"])
        assert module.VALUE == 42
        assert isinstance(module.__loader__, importlib.machinery.SourceFileLoader)
        assert os.path.exists(module.__cached__) is written
        assert module.__cached__.startswith(str(prefix))
    for name in ("zz_probe.mod", "zz_probe"):
        sys.modules.pop(name, None)


PROBE = textwrap.dedent("""
    import json, sys
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
    _AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
    import ansible_collections.stacksync.k8s.plugins.action.stack  # installs the finder, imports the engine
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine import insync, prepare
    print(json.dumps({
        "finders": [type(f).__name__ for f in sys.meta_path][:2],
        "loader": type(prepare.__loader__).__name__,
        "cached": prepare.__cached__,
        "digest": insync.code_digest([insync, prepare]),
        "engine": sorted(n for n, m in sys.modules.items() if n.startswith("ansible_collections.stacksync.k8s.plugins.")
                         and type(getattr(m, "__loader__", None)).__name__ == "SourceFileLoader"),
    }))
""")


def _probe(tmp_path, **env):
    run_env = dict(os.environ, PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"), **env)
    if env.get("PYTHONDONTWRITEBYTECODE") is None:
        run_env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run([sys.executable, "-c", PROBE, str(COLLECTIONS_ROOT)], env=run_env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def test_the_action_plugin_imports_the_engine_with_its_bytecode_kept(tmp_path):
    """Under ansible-core's collection loader, the stack action's import puts the finder before ansible-core's, and
    the engine's modules are imported by the source loader: their bytecode written on the first import, read (not
    written again) on the next; the code digest of the in-sync memo is the same either way."""
    first = _probe(tmp_path)
    assert first["finders"] == ["CachedSourceFinder", "_AnsibleCollectionFinder"]
    assert first["loader"] == "SourceFileLoader"
    assert first["digest"]
    assert "ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager" in first["engine"]
    assert "ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action" in first["engine"]
    cached = first["cached"]
    assert cached.startswith(str(tmp_path / "pycache")) and os.path.exists(cached)
    written = os.stat(cached).st_mtime_ns
    second = _probe(tmp_path)
    assert second["digest"] == first["digest"] and second["engine"] == first["engine"]
    assert os.stat(cached).st_mtime_ns == written


def test_no_bytecode_written_when_python_is_told_not_to(tmp_path):
    probe = _probe(tmp_path, PYTHONDONTWRITEBYTECODE="1")
    assert probe["loader"] == "SourceFileLoader"
    assert not os.path.exists(tmp_path / "pycache")
