#!/usr/bin/env bash
# The import check Galaxy and Automation Hub run (galaxy-importer), on the built tarball, with the
# settings of tests/tools/galaxy-importer.cfg (ansible-doc and ansible-lint on; ansible-test off: it
# needs a container runtime and a network, and `make test` runs it anyway).
# Fails on an import error and on any WARNING or ERROR line (a missing role README, an ansible-lint
# finding, a tool that could not run): Galaxy shows those to every user of the collection.
#   usage: galaxy_import.sh TARBALL VENV_BIN
set -euo pipefail
tarball=$(realpath "${1:?usage: galaxy_import.sh TARBALL VENV_BIN}")
venv_bin=$(realpath "${2:?usage: galaxy_import.sh TARBALL VENV_BIN}")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/stacksync-galaxy-import-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"  # the importer writes importer_result.json into the current directory
rc=0
PATH="$venv_bin:$PATH" GALAXY_IMPORTER_CONFIG="$here/galaxy-importer.cfg" \
  "$venv_bin/python" -m galaxy_importer.main "$tarball" >log 2>&1 || rc=$?
if [ "$rc" -ne 0 ] || grep -qE '^(WARNING|ERROR)' log || ! grep -q '^Importer processing completed successfully' log; then
  grep -vE '^Loading ' log
  echo "galaxy-importer: FAILED (exit $rc) on $(basename "$tarball")"
  exit 1
fi
echo "galaxy-importer: $(basename "$tarball") imports cleanly ($(grep -c '^Loading ' log) content items, ansible-doc and ansible-lint run)"
