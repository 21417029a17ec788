#!/usr/bin/env bash
# `make demo`: sync the example repo (examples/repo, turned into a real git repo) into a local
# Kubernetes API simulator, sync again (nothing to do), change a file and remove one, preview with
# --check --diff, sync and show what was pruned.
#   usage: bash examples/demo.sh [COLLECTIONS_PATH]
# Runs with the virtualenv STACKSYNC_DEMO_VENV (default: .venv-demo, which `make demo` creates with
# ansible-core and requirements.txt only). Without COLLECTIONS_PATH (a directory holding
# ansible_collections/stacksync/k8s), this checkout is installed into a temporary collections path.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${STACKSYNC_DEMO_VENV:-$root/.venv-demo}
py="$venv/bin/python"
[ -x "$py" ] || { echo "demo: $py is missing; run 'make demo' (it creates .venv-demo)" >&2; exit 1; }
collections=${1:-}
if [ -n "$collections" ] && [ ! -d "$collections/ansible_collections/stacksync/k8s" ]; then
  echo "demo: no stacksync.k8s under $collections" >&2
  exit 1
fi

export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
export ANSIBLE_NOCOLOR=${ANSIBLE_NOCOLOR:-1}
export ANSIBLE_LOCALHOST_WARNING=false
export ANSIBLE_INVENTORY_UNPARSED_WARNING=false
export ANSIBLE_RETRY_FILES_ENABLED=false
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.com
export GIT_CONFIG_NOSYSTEM=1

work=$(mktemp -d "${TMPDIR:-/tmp}/stacksync-demo-XXXXXX")
# `make demo` passes the time it started (before it built .venv-demo), so the steps count from there
started=$((SECONDS - ($(date +%s) - ${STACKSYNC_DEMO_STARTED:-$(date +%s)})))
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

step() { printf '\n==> [%2ds] %s\n' "$((SECONDS - started))" "$*"; }

step "Starting the Kubernetes API simulator (tests/kubesim: an in-memory API server, no cluster needed)"
(cd "$root" && exec "$py" -m tests.kubesim --port 0 --kubeconfig "$work/kubeconfig") >"$work/simulator.log" 2>&1 &
sim_pid=$!

version=$(sed -n 's/^version: *//p' "$root/galaxy.yml")
if [ -z "$collections" ]; then
  step "Installing the collection from this checkout (ansible-galaxy collection install) for the demo"
  collections="$work/collections"
  mkdir -p "$collections"
  # ANSIBLE_COLLECTIONS_PATH names the target: no "not part of the configured collections paths" warning
  (cd "$root" && ANSIBLE_COLLECTIONS_PATH="$collections" "$venv/bin/ansible-galaxy" collection install \
    --force -p "$collections" . >/dev/null)
  echo "installed stacksync.k8s $version into a temporary collections path"
fi
export ANSIBLE_COLLECTIONS_PATH="$collections"

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
  if ! "$venv/bin/ansible-playbook" stacksync.k8s.sync -i "$work/clusters.yml" -e @"$work/sources.yml" "$@" \
      >"$work/last-run.log" 2>&1; then
    cat "$work/last-run.log"
    echo "demo: ansible-playbook stacksync.k8s.sync $* failed (its output is above)" >&2
    return 1
  fi
}

summary() {
  # What the sync said: a line per stack as it writes and when it is done, the table at the end (and, under it,
  # what each stack created, changed and pruned), then the line over every cluster and Ansible's recap.
  awk '/^stacksync (summary )?\[/ {p = /^stacksync summary/; print; next}
       /^stacksync: / {print; next} p && /^  / {print; next} {p = 0}
       /^PLAY RECAP/ {r = 1; next} r && NF {sub(/ +$/, ""); print}' "$work/last-run.log"
}

step "First sync: ansible-playbook stacksync.k8s.sync creates everything"
sync >/dev/null
summary

step "Second sync without changes: nothing to do (changed=0)"
sync >/dev/null
summary
grep -qE '^demo-cluster +: .*changed=0 ' "$work/last-run.log"

step "Changes in git: replicas 2 -> 3, a new log level, and git rm configmap-feature-flags.yaml"
sed -i 's/replicas: 2/replicas: 3/' "$repo/deployment.yaml"
sed -i 's/LOG_LEVEL: info/LOG_LEVEL: debug/' "$repo/configmap-app.yaml"
git -C "$repo" rm -q configmap-feature-flags.yaml
git -C "$repo" commit -q -am "Scale web to 3 replicas, debug logging, drop the feature flags"
git -C "$repo" log --oneline -1

step "Dry run first: ansible-playbook stacksync.k8s.sync --check --diff (nothing is written)"
sync --check --diff >/dev/null
# changed objects as unified diffs; created / pruned ones in one line each ("- ConfigMap demo/x (deleted, 120 bytes)")
sed -n -e '/^--- before/,/^$/p' -e '/^[+-] [A-Za-z.]* [^ ]* (\(created\|deleted\), /p' "$work/last-run.log" | head -60
summary

step "Sync: the two objects are updated and the removed one is pruned"
sync >/dev/null
summary

step "Checking the result"
pruned=$(summary | sed -n -E 's/^    pruned (.*)$/\1/p')
count=$(summary | awk '$1 == "demo" {print $6}')  # the PRUNED column of stack demo
if [ "$count" = "1" ] && [ "$pruned" = "ConfigMap demo/feature-flags" ]; then
  echo "OK: exactly one object was pruned: $pruned"
else
  echo "demo: expected exactly ConfigMap demo/feature-flags to be pruned, got count=${count:-?}: ${pruned:-nothing}" >&2
  exit 1
fi
"$py" - "$work/kubeconfig" <<'PY'
import json
import sys
import urllib.request

import yaml

with open(sys.argv[1]) as f:
    config = yaml.safe_load(f)
server = config["clusters"][0]["cluster"]["server"]
token = config["users"][0]["user"]["token"]
request = urllib.request.Request(server + "/api/v1/namespaces/demo/configmaps",
                                 headers={"Authorization": "Bearer " + token})
with urllib.request.urlopen(request) as response:
    names = sorted(cm["metadata"]["name"] for cm in json.load(response)["items"])
print("ConfigMaps left in namespace demo: " + ", ".join(names))
if "feature-flags" in names:
    sys.exit("demo: feature-flags is still in the cluster")
PY
echo
echo "Demo complete in $((SECONDS - started)) s: first sync, no-op, changes and a removal (--check --diff, then applied and pruned)."

rel_venv=${venv#"$root"/}
cat <<EOF

==> Next: your own cluster and your own repository, from this directory with the same virtualenv.
    examples/local.yml targets the current context of ~/.kube/config (edit it to choose another).

  $rel_venv/bin/ansible-galaxy collection install --force .
  $rel_venv/bin/ansible-playbook stacksync.k8s.sync -i examples/local.yml -e stacksync_repo=https://github.com/YOU/REPO.git -e stacksync_path=deploy --check --diff

The first installs this collection into ~/.ansible/collections; the second shows what syncing the
manifests under deploy/ of your repository would change (without --check --diff it applies them).
EOF
