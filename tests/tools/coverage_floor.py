"""The unit tests' line coverage of every module of plugins/module_utils and plugins/plugin_utils: each at least
the floor (``make coverage`` runs this on coverage's JSON report and fails when a module is under it).

    python -m tests.tools.coverage_floor build/coverage.json [--floor 80]

A module missing from the report (never imported by a unit test) counts as 0%. Exit status 1 when any module
is under the floor, with one line per such module.
"""

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the directories whose modules each need their own unit tests (tests/unit/plugins/<dir>/test_<module>.py)
DIRECTORIES = ("plugins/module_utils", "plugins/plugin_utils")
FLOOR = 80.0


def modules(root=REPO):
    """The modules the floor applies to, as paths relative to the collection root (``plugins/module_utils/x.py``)."""
    return sorted(p.relative_to(root).as_posix() for d in DIRECTORIES for p in (root / d).rglob("*.py")
                  if p.name != "__init__.py")  # subpackages included


def percents(report):
    """``{relative path: percent of lines covered}`` from coverage's JSON report (paths as the report has them)."""
    out = {}
    for path, entry in (report.get("files") or {}).items():
        for directory in DIRECTORIES:
            at = path.replace("\\", "/").find(directory + "/")
            if at >= 0:
                out[path.replace("\\", "/")[at:]] = float(entry["summary"]["percent_covered"])
    return out


def under_floor(report, expected, floor=FLOOR):
    """``[(module, percent)]`` of the ``expected`` modules under ``floor`` (0 for one the report lacks)."""
    found = percents(report)
    return [(m, found.get(m, 0.0)) for m in expected if found.get(m, 0.0) < floor]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", help="coverage's JSON report (coverage json -o PATH)")
    parser.add_argument("--floor", type=float, default=FLOOR, help="least percent of lines covered (default %(default)s)")
    args = parser.parse_args(argv)
    with open(args.report) as f:
        report = json.load(f)
    expected = modules()
    low = under_floor(report, expected, args.floor)
    for module, percent in low:
        print(f"{module}: {percent:.0f}% of its lines covered by the unit tests, under the floor of {args.floor:.0f}%")
    if low:
        print(f"{len(low)} of {len(expected)} modules under the floor: add unit tests to their mirrored files "
              "(tests/unit/plugins/<dir>/test_<module>.py)")
        return 1
    print(f"every module of {' and '.join(DIRECTORIES)}: at least {args.floor:.0f}% of its lines covered by the unit "
          f"tests ({len(expected)} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
