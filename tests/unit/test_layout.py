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
    assert len(MODULES) >= 50 and ("module_utils", "manager") in MODULES and ("plugin_utils", "render") in MODULES


def test_an_import_of_a_module_or_of_a_name_in_it_counts(tmp_path):
    test_file = tmp_path / "test_x.py"
    test_file.write_text("from ansible_collections.stacksync.k8s.plugins.module_utils import plan as P\n"
                         "from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import KubeClient\n"
                         "import ansible_collections.stacksync.k8s.plugins.plugin_utils.render\n"
                         "from tests.unit.plugins.module_utils.simengine import sync\n")
    found = imported_modules(test_file)
    assert {"module_utils.plan", "module_utils.k8s.client", "plugin_utils.render"} <= found
    assert not any("simengine" in name for name in found)


@pytest.mark.parametrize("directory, module", MODULES, ids=[f"{d}/{m}" for d, m in MODULES])
def test_each_module_has_its_mirrored_unit_test_file(directory, module):
    test_file = REPO / "tests" / "unit" / "plugins" / directory / f"test_{module}.py"
    assert test_file.is_file(), f"add {test_file.relative_to(REPO)}: the unit tests of {directory}/{module}.py"
    dotted = directory.replace("/", ".") + "." + module
    assert dotted in imported_modules(test_file), (
        f"{test_file.relative_to(REPO)} does not import {dotted}, the module it mirrors")
