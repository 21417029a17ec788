#!/usr/bin/env bash
# Fail when the collection tarball ships build junk (venvs, caches, test output, nested tarballs).
set -euo pipefail
tarball=${1:?usage: check_tarball.sh TARBALL}
junk=$(tar -xzOf "$tarball" FILES.json | python3 -c '
import json, re, sys
bad = re.compile(r"(^|/)(\.venv[^/]*|__pycache__|\.pytest_cache|\.ruff_cache|\.hypothesis|\.git|build|output)(/|$)|\.pyc$|\.tar\.gz$")
for f in json.load(sys.stdin)["files"]:
    if bad.search(f["name"]):
        print(f["name"])
')
if [ -n "$junk" ]; then
  echo "check_tarball: $tarball contains files that must be excluded with build_ignore:" >&2
  echo "$junk" >&2
  exit 1
fi
echo "check_tarball: $(tar -tzf "$tarball" | wc -l) entries, no build junk"
