"""Every module of plugins/module_utils and plugins/plugin_utils has its mirrored unit test file,
tests/unit/plugins/<dir>/test_<module>.py, that imports it (a module may keep more test files besides).

Subpackages are mirrored too: ``plugins/module_utils/k8s/client.py`` by ``tests/unit/plugins/module_utils/k8s/test_client.py``.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIRECTORIES = ("module_utils", "plugin_utils")
#: ``(directory below plugins/, module name)`` of every module, subpackages included
MODULES = sorted((p.parent.relative_to(REPO / "plugins").as_posix(), p.stem) for d in DIRECTORIES
                 for p in (REPO / "plugins" / d).rglob("*.py") if p.stem != "__init__")


def imported_modules(test_file):
    """The dotted names below ``plugins`` that ``test_file`` imports (``module_utils.x``, ``module_utils.k8s.y``, ...)."""
    found = set()
    for node in ast.walk(ast.parse(test_file.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "ansible_collections" and "plugins" in parts:
                below = parts[parts.index("plugins") + 1:]
                found.update(".".join(below[:n]) for n in range(2, len(below) + 1))
    return found


def test_there_are_modules_to_mirror():
    assert len(MODULES) >= 50 and ("module_utils/engine", "manager") in MODULES and ("plugin_utils", "render") in MODULES


def test_an_import_of_a_module_or_of_a_name_in_it_counts(tmp_path):
    test_file = tmp_path / "test_x.py"
    test_file.write_text("from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan as P\n"
                         "from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import KubeClient\n"
                         "import ansible_collections.stacksync.k8s.plugins.plugin_utils.render\n"
                         "from tests.unit.plugins.module_utils.simengine import sync\n")
    found = imported_modules(test_file)
    assert {"module_utils.engine.plan", "module_utils.k8s.client", "plugin_utils.render"} <= found
    assert not any("simengine" in name for name in found)


@pytest.mark.parametrize("directory, module", MODULES, ids=[f"{d}/{m}" for d, m in MODULES])
def test_each_module_has_its_mirrored_unit_test_file(directory, module):
    test_file = REPO / "tests" / "unit" / "plugins" / directory / f"test_{module}.py"
    assert test_file.is_file(), f"add {test_file.relative_to(REPO)}: the unit tests of {directory}/{module}.py"
    dotted = directory.replace("/", ".") + "." + module
    assert dotted in imported_modules(test_file), (
        f"{test_file.relative_to(REPO)} does not import {dotted}, the module it mirrors")


#: the layers of plugins/module_utils, lowest first: a module imports its own package and the layers below it only
#: (``base`` ← ``k8s`` / ``health`` ← ``engine`` ← the modules' entry points at the top level); ``k8s`` and
#: ``health`` are side by side and import neither each other nor anything above
LAYERS = {"base": 0, "k8s": 1, "health": 1, "engine": 2, "": 3}
PLUGINS = REPO / "plugins"


def layer_of(dotted):
    """The layer of ``module_utils.<package>.<module>`` (``""`` for a module of the top level)."""
    parts = dotted.split(".")
    return parts[1] if len(parts) == 3 else ""


def module_utils_imports(path):
    """The ``module_utils.…`` modules that ``path`` imports (names imported from a package count as modules)."""
    found = imported_modules(path)
    modules = {(d, m) for d, m in MODULES}
    return {name for name in found if name.startswith("module_utils.")
            and tuple(name.rsplit(".", 1)) in {(d.replace("/", "."), m) for d, m in modules}}


def layer_violations(path, plugins=PLUGINS):
    """``[(importer, imported)]`` of ``path``'s imports that point up or sideways between layers."""
    me = path.relative_to(plugins).with_suffix("").as_posix().replace("/", ".")
    mine = layer_of(me)
    bad = []
    for name in sorted(module_utils_imports(path)):
        theirs = layer_of(name)
        if theirs != mine and LAYERS[theirs] >= LAYERS[mine]:
            bad.append((me, name))
    if any(n.startswith("plugin_utils.") for n in imported_modules(path)):
        bad.append((me, "plugin_utils (controller-side code)"))
    return bad


def test_every_module_of_module_utils_is_in_a_layer():
    for directory, _module in MODULES:
        if directory.startswith("module_utils"):
            assert directory.count("/") <= 1 and layer_of(directory.replace("/", ".") + ".x") in LAYERS


def test_imports_of_module_utils_only_point_down():
    violations = [v for p in sorted((PLUGINS / "module_utils").rglob("*.py")) for v in layer_violations(p)]
    assert violations == []


def test_a_module_importing_upwards_is_found(tmp_path):
    fake = PLUGINS / "module_utils" / "k8s" / "client.py"
    text = fake.read_text() + "\nfrom ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan\n"
    copy = tmp_path / "plugins" / "module_utils" / "k8s" / "client.py"
    copy.parent.mkdir(parents=True)
    copy.write_text(text)
    assert layer_violations(copy, tmp_path / "plugins") == [("module_utils.k8s.client", "module_utils.engine.plan")]
