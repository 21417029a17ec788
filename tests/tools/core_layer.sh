#!/usr/bin/env bash
# One ansible-core / Python layer of the test matrix: a virtualenv with that ansible-core (and the
# collection's requirements, pytest) on that Python, then the checks asked for:
#   sanity       ansible-test sanity on the installed collection
#   unit         pytest tests/unit
#   integration  ansible-test integration of the stack module and sync role targets
#                (tests/integration/targets/{stack,sync_role}, against the simulator)
#   pytest       pytest tests/integration/test_stack_module.py and test_sync_role.py
#
#   usage: core_layer.sh ANSIBLE_CORE_VERSION PYTHON_VERSION COLLECTIONS_PATH TEST_ROOT CHECK...
#
# The Python comes from pyenv (`pyenv latest X.Y`) or pythonX.Y on PATH; where neither exists the
# layer is skipped with a message (exit 0), as on many users' machines.
set -euo pipefail
core=${1:?usage: core_layer.sh CORE PYTHON COLLECTIONS TEST_ROOT CHECK...}
pyver=${2:?}
collections=${3:?}
test_root=${4:?}
shift 4
repo=$(cd "$(dirname "$0")/../.." && pwd)
label="ansible-core $core / Python $pyver"

py=""
if command -v pyenv >/dev/null && v=$(pyenv latest "$pyver" 2>/dev/null); then
  py="$(pyenv root)/versions/$v/bin/python$pyver"
fi
[ -x "$py" ] || py=$(command -v "python$pyver" || true)
if [ -z "$py" ] || [ ! -x "$py" ]; then
  echo "SKIP: no Python $pyver found (pyenv or python$pyver on PATH): the $label layer did not run"
  exit 0
fi

venv="$test_root/venvs/core-$core-py$pyver"
reqs=$(grep -E '^(kubernetes|PyYAML|jmespath|pytest|pytest-xdist|hypothesis|cryptography)(==|>=)' "$repo/tests/requirements.txt" | tr '\n' ' ')
stamp="ansible-core==$core $reqs"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$venv"
  "$py" -m venv "$venv"
  # shellcheck disable=SC2086  # $reqs is a list of requirement specifiers
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "ansible-core==$core" $reqs
  printf '%s' "$stamp" > "$venv/.stamp"
fi
echo "=== $label layer ($*) with $py"

# ansible-test bootstraps pip with a script it downloads; install the offline stand-in as its cache.
pipver=$("$venv/bin/python" -c 'import re, ansible_test, pathlib; p = pathlib.Path(ansible_test.__file__).parent / "_internal/python_requirements.py"; print(re.search(r"pip=.([0-9.]+).", p.read_text()).group(1))')
mkdir -p "$HOME/.ansible/test/cache"
cp "$repo/tests/tools/get_pip_offline.py" "$HOME/.ansible/test/cache/get_pip_${pipver//./_}.py"

export ANSIBLE_NOCOLOR=1 ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
for check in "$@"; do
  case $check in
    sanity)
      (cd "$collections/ansible_collections/stacksync/k8s" && PATH="$venv/bin:$PATH" "$venv/bin/ansible-test" sanity --local --python "$pyver" --color no) ;;
    unit)
      (cd "$repo" && STACKSYNC_COLLECTIONS_PATH="$collections" "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/unit) ;;
    integration)
      # ansible-test wants the collection at ansible_collections/<ns>/<name>, with its targets: stage
      # the checkout's files (tracked and untracked, not ignored).
      stage="$test_root/stage-$core/ansible_collections/stacksync/k8s"
      rm -rf "$test_root/stage-$core" && mkdir -p "$stage"
      (cd "$repo" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf -) | tar -xf - -C "$stage"
      (cd "$stage" && PATH="$venv/bin:$PATH" "$venv/bin/ansible-test" integration --local --python "$pyver" --color no stack sync_role)
      rm -rf "$test_root/stage-$core" ;;
    pytest)
      (cd "$repo" && STACKSYNC_COLLECTIONS_PATH="$collections" "$venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile \
        tests/integration/test_stack_module.py tests/integration/test_sync_role.py) ;;
    *) echo "core_layer.sh: unknown check $check" >&2; exit 2 ;;
  esac
done
echo "=== $label layer: passed ($*)"
