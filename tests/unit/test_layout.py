"""Every module of plugins/module_utils and plugins/plugin_utils has its mirrored unit test file,
tests/unit/plugins/<dir>/test_<module>.py, that imports it (a module may keep more test files besides)."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIRECTORIES = ("module_utils", "plugin_utils")
MODULES = sorted((d, p.stem) for d in DIRECTORIES for p in (REPO / "plugins" / d).glob("*.py") if p.stem != "__init__")


def imported_modules(test_file):
    """The collection modules ``test_file`` imports (``module_utils.x``, ``plugin_utils.y``)."""
    found = set()
    for node in ast.walk(ast.parse(test_file.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            for d in DIRECTORIES:
                if d in parts and parts.index(d) + 1 < len(parts):
                    found.add(f"{d}.{parts[parts.index(d) + 1]}")
    return found


def test_there_are_modules_to_mirror():
    assert len(MODULES) >= 50 and ("module_utils", "manager") in MODULES and ("plugin_utils", "render") in MODULES


@pytest.mark.parametrize("directory, module", MODULES, ids=["{}/{}".format(*m) for m in MODULES])
def test_each_module_has_its_mirrored_unit_test_file(directory, module):
    test_file = REPO / "tests" / "unit" / "plugins" / directory / (f"test_{module}.py")
    assert test_file.is_file(), f"add {test_file.relative_to(REPO)}: the unit tests of {directory}/{module}.py"
    assert f"{directory}.{module}" in imported_modules(test_file), (
        f"{test_file.relative_to(REPO)} does not import {directory}.{module}, the module it mirrors")
