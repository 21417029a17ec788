#!/usr/bin/env bash
# `make demo`: sync the example repo (examples/repo, turned into a real git repo) into a local
# Kubernetes API simulator, change it, remove a file, sync again and show what was pruned.
#   usage: bash examples/demo.sh COLLECTIONS_PATH
set -euo pipefail

collections=${1:?usage: demo.sh COLLECTIONS_PATH (a directory holding ansible_collections/stacksync/k8s)}
root=$(cd "$(dirname "$0")/.." && pwd)
py="$root/.venv/bin/python"
[ -x "$py" ] || { echo "demo: $py is missing; run 'make demo' (it creates .venv)" >&2; exit 1; }
[ -d "$collections/ansible_collections/stacksync/k8s" ] || { echo "demo: no stacksync.k8s under $collections" >&2; exit 1; }

export ANSIBLE_COLLECTIONS_PATH="$collections"
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
export ANSIBLE_NOCOLOR=${ANSIBLE_NOCOLOR:-1}
export ANSIBLE_CALLBACK_RESULT_FORMAT=yaml
export ANSIBLE_LOCALHOST_WARNING=false
export ANSIBLE_INVENTORY_UNPARSED_WARNING=false
export ANSIBLE_RETRY_FILES_ENABLED=false
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.com
export GIT_CONFIG_NOSYSTEM=1

work=$(mktemp -d "${TMPDIR:-/tmp}/stacksync-demo-XXXXXX")
sim_pid=""
cleanup() {
  if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
    kill "$sim_pid" 2>/dev/null || true
    wait "$sim_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n==> %s\n' "$*"; }

step "Starting the Kubernetes API simulator"
(cd "$root" && exec "$py" -m tests.kubesim --port 0 --kubeconfig "$work/kubeconfig") >"$work/simulator.log" 2>&1 &
sim_pid=$!
for _ in $(seq 1 150); do
  [ -s "$work/kubeconfig" ] && break
  kill -0 "$sim_pid" 2>/dev/null || { echo "demo: the simulator exited:" >&2; cat "$work/simulator.log" >&2; exit 1; }
  sleep 0.2
done
[ -s "$work/kubeconfig" ] || { echo "demo: the simulator did not write $work/kubeconfig within 30s" >&2; cat "$work/simulator.log" >&2; exit 1; }
echo "simulator running (pid $sim_pid), kubeconfig $work/kubeconfig"

step "Creating a git repository from examples/repo"
repo="$work/repo"
mkdir -p "$repo"
cp -R "$root/examples/repo/." "$repo/"
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" commit -q -m "Initial manifests"
git -C "$repo" log --oneline
ls "$repo"

cat >"$work/clusters.yml" <<YAML
---
all:
  hosts:
    demo-cluster:
      stacksync_kubeconfig: $work/kubeconfig
      ansible_python_interpreter: $py
YAML
cat >"$work/sources.yml" <<YAML
---
stacksync_cache_dir: $work/cache
stacksync_sources:
  - repo: file://$repo
    version: main
    stack: demo
YAML

sync() {
  "$root/.venv/bin/ansible-playbook" stacksync.k8s.sync -i "$work/clusters.yml" -e @"$work/sources.yml" "$@" \
    | tee "$work/last-run.log"
}

summary() {
  # The role's summary task, as printed by the default callback (YAML result format).
  sed -n '/TASK \[stacksync.k8s.sync : Summary of the sync\]/,/^$/p' "$work/last-run.log" | sed -n '/msg:/,$p'
}

step "First sync: everything is created"
sync >/dev/null
summary

step "Second sync without changes: nothing to do (changed=0)"
sync >/dev/null
summary
grep -E '^demo-cluster +: .*changed=0 ' "$work/last-run.log"

step "A change in git: replicas 2 -> 3, new log level"
sed -i 's/replicas: 2/replicas: 3/' "$repo/deployment.yaml"
sed -i 's/LOG_LEVEL: info/LOG_LEVEL: debug/' "$repo/configmap-app.yaml"
git -C "$repo" commit -q -am "Scale web to 3 replicas, debug logging"
git -C "$repo" log --oneline -1
step "Dry run first: ansible-playbook stacksync.k8s.sync --check --diff"
sync --check --diff >/dev/null
sed -n '/^--- before/,/^$/p' "$work/last-run.log" | head -60
summary
step "Sync the change"
sync >/dev/null
summary

step "A removal in git: git rm configmap-feature-flags.yaml"
git -C "$repo" rm -q configmap-feature-flags.yaml
git -C "$repo" commit -q -m "Drop the feature flags"
git -C "$repo" log --oneline -1
sync >/dev/null
summary

step "Checking the result"
pruned=$(summary | grep -Eo "^ *- '  pruned [^']+" | sed -E "s/^ *- '  pruned //" || true)
count=$(summary | grep -Eo 'pruned [0-9]+' | head -1 | grep -Eo '[0-9]+' || true)
if [ "$count" = "1" ] && [ "$pruned" = "ConfigMap demo/feature-flags" ]; then
  echo "OK: exactly one object was pruned: $pruned"
else
  echo "demo: expected exactly ConfigMap demo/feature-flags to be pruned, got count=${count:-?}: ${pruned:-nothing}" >&2
  exit 1
fi
"$py" - "$work/kubeconfig" <<'PY'
import sys
from kubernetes import client, config
api = client.CoreV1Api(config.new_client_from_config(config_file=sys.argv[1]))
names = sorted(cm.metadata.name for cm in api.list_namespaced_config_map("demo").items)
print("ConfigMaps left in namespace demo: " + ", ".join(names))
if "feature-flags" in names:
    sys.exit("demo: feature-flags is still in the cluster")
PY
echo
echo "Demo complete: first sync, no-op, change (--check --diff, then applied), removal -> prune."
