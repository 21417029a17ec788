#!/usr/bin/env bash
# Run the conformance and integration suites against a real kube-apiserver.
#   STACKSYNC_TEST_KUBECONFIG=...  use that cluster (and STACKSYNC_TEST_LIMITED_KUBECONFIG if set);
#   else start one with ../shared/kube/up (a real kube-apiserver + controller-manager) and stop it
#   afterwards; else skip with a message (users' machines have neither).
set -euo pipefail
collections=${1:?usage: test_real.sh COLLECTIONS_PATH}
repo=$(cd "$(dirname "$0")/../.." && pwd)
up="$repo/../shared/kube/up"
down="$repo/../shared/kube/down"
if [ -z "${STACKSYNC_TEST_KUBECONFIG:-}" ]; then
  if [ ! -x "$up" ]; then
    echo "SKIP: no STACKSYNC_TEST_KUBECONFIG and no ../shared/kube/up: the real-cluster layer did not run"
    exit 0
  fi
  dir=$(mktemp -d "${TMPDIR:-/tmp}/stacksync-real-XXXXXX")
  trap '"$down" "$dir" --wipe >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
  "$up" "$dir"
  export STACKSYNC_TEST_KUBECONFIG="$dir/kubeconfig"
  export STACKSYNC_TEST_LIMITED_KUBECONFIG="$dir/limited.kubeconfig"
fi
cd "$repo"
STACKSYNC_COLLECTIONS_PATH="$collections" .venv/bin/python -m pytest -p no:cacheprovider ${PYTEST_ARGS:-} tests/conformance tests/integration tests/reliability
