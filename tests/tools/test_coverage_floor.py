"""Unit tests of tests/tools/coverage_floor.py: the per-module floor ``make coverage`` enforces."""

import json

from tests.tools import coverage_floor as F


def report(**percent_by_path):
    return {"files": dict((path, {"summary": {"percent_covered": percent}}) for path, percent in percent_by_path.items())}


def test_every_module_of_both_directories_is_held_to_the_floor():
    found = F.modules()
    assert "plugins/module_utils/engine/manager.py" in found and "plugins/plugin_utils/kubeyaml.py" in found
    assert not any(m.endswith("__init__.py") for m in found)
    assert all(m.startswith(F.DIRECTORIES) for m in found)


def test_modules_under_the_floor_or_missing_from_the_report_are_named():
    data = {"files": {"plugins/module_utils/a.py": {"summary": {"percent_covered": 79.9}},
                      "/x/ansible_collections/stacksync/k8s/plugins/plugin_utils/b.py": {"summary": {"percent_covered": 80.0}},
                      "plugins/action/c.py": {"summary": {"percent_covered": 0}}}}
    expected = ["plugins/module_utils/a.py", "plugins/plugin_utils/b.py", "plugins/plugin_utils/never.py"]
    assert F.under_floor(data, expected) == [("plugins/module_utils/a.py", 79.9), ("plugins/plugin_utils/never.py", 0.0)]
    assert F.under_floor(data, expected, floor=0) == []


def test_main_fails_naming_the_modules_under_the_floor(tmp_path, capsys):
    everything = dict((m, 100.0) for m in F.modules())
    path = tmp_path / "coverage.json"
    path.write_text(json.dumps(report(**everything)))
    assert F.main([str(path)]) == 0
    assert "at least 80% of its lines" in capsys.readouterr().out
    everything["plugins/module_utils/engine/manager.py"] = 36.0
    del everything["plugins/plugin_utils/kubeyaml.py"]
    path.write_text(json.dumps(report(**everything)))
    assert F.main([str(path), "--floor", "50"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["plugins/module_utils/engine/manager.py: 36% of its lines covered by the unit tests, under the floor of 50%",
                       "plugins/plugin_utils/kubeyaml.py: 0% of its lines covered by the unit tests, under the floor of 50%"]
    assert out[2].startswith(f"2 of {len(F.modules())} modules under the floor")
