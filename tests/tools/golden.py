"""Golden outputs: what ``ansible-playbook stacksync.k8s.sync`` prints in the common runs, as a person sees it.

Each scenario is a real run, at default verbosity, of the playbook (or of the role in a play of one's own) on the
Kubernetes API simulator (``tests/kubesim``), with the example repository ``examples/repo`` made a git repository:
a first sync, a no-op, a change previewed and made, a prune, and each usual mistake (a missing kubeconfig, a server
that is down, a repository that does not exist, a file that is not YAML, an apply the API server refuses), then a
fleet of two clusters. What changes from run to run (timings, ports, temporary paths) is normalised
(:data:`NORMALISE`); commits are the same on every run (fixed dates).

    python -m tests.tools.golden             # run every scenario, compare with tests/golden/*.txt (exit 1 on change)
    python -m tests.tools.golden --update    # after reviewing the change: write tests/golden/*.txt and docs/output.md
    python -m tests.tools.golden --show NAME # print one scenario's output as it is now

``tests/integration/test_golden.py`` runs the comparison in ``make test``, so an output change is a reviewed change:
the diff of tests/golden/ (and of docs/output.md, which shows them) is in the commit that makes it.
"""

import argparse
import difflib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
DOC = ROOT / "docs" / "output.md"
#: the path of the scenarios' directory in the goldens (a temporary directory when they run)
WORK = "/tmp/demo"
SIM_PORT, DOWN_PORT = "6443", "6444"
GIT_ENV = {"GIT_AUTHOR_NAME": "Demo", "GIT_AUTHOR_EMAIL": "demo@example.com", "GIT_COMMITTER_NAME": "Demo",
           "GIT_COMMITTER_EMAIL": "demo@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

#: ``(pattern, replacement)`` applied to every line, in order, after the paths and ports (:func:`normalise`)
NORMALISE = [
    (re.compile(r"\b\d+\.\d s\b"), "0.2 s"),  # "in 0.4 s", "FAILED after 4.1 s"
    (re.compile(r"\bin \d+ ?s\)"), "in 4 s)"),  # a retry budget's elapsed time: "(... in 4s)"
    (re.compile(r'"seconds": \d+(?:\.\d+)?'), '"seconds": 0.2'),  # in a result Ansible prints
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b"), "2026-01-01T00:00:00Z"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "00000000-0000-0000-0000-000000000000"),
    (re.compile(r"\S*/ansible_collections/stacksync/k8s/"), "~/.ansible/collections/ansible_collections/stacksync/k8s/"),
]


class Scenario:
    """One run: ``args`` of ansible-playbook (the playbook first), after ``prepare(work)`` (git changes, files)."""

    def __init__(self, name, title, about, args, prepare=None, alone=True):
        self.name, self.title, self.about, self.args = name, title, about, args
        #: ``alone=False``: it changes nothing, and runs at the same time as its neighbours that do not either
        self.prepare, self.alone = prepare, alone

    @property
    def command(self):
        return "ansible-playbook " + " ".join(self.args)


# -- the example repository and its changes ---------------------------------------------------------------

def git(work, *args):
    env = dict(os.environ, **GIT_ENV)
    # fixed dates: the same commits (the same SHAs in the goldens) on every run
    count = int(subprocess.run(["git", "rev-list", "--count", "--all"], cwd=work / "repo", env=env,
                               capture_output=True, text=True).stdout.strip() or 0)
    date = f"2026-01-01T12:{count:02d}:00+00:00"
    env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", *args], cwd=work / "repo", env=env, check=True, capture_output=True, text=True)


def edit(work, name, old, new):
    path = work / "repo" / name
    path.write_text(path.read_text().replace(old, new))


def change(work):
    edit(work, "deployment.yaml", "replicas: 2", "replicas: 3")
    edit(work, "configmap-app.yaml", "LOG_LEVEL: info", "LOG_LEVEL: debug")
    git(work, "commit", "-q", "-am", "Scale web to 3 replicas, debug logging")


def remove(work):
    git(work, "rm", "-q", "configmap-feature-flags.yaml")
    git(work, "commit", "-q", "-m", "Drop the feature flags")


def break_yaml(work):
    (work / "repo" / "configmap-app.yaml").write_text(textwrap.dedent("""\
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: app-config
          namespace: demo
        data:
          LOG_LEVEL: debug
          GREETING: "Hello from git
        """))
    git(work, "commit", "-q", "-am", "Say hello")


def fix_yaml_and_change_the_selector(work):
    git(work, "revert", "--no-edit", "HEAD")
    edit(work, "deployment.yaml", "  selector:\n    matchLabels:\n      app.kubernetes.io/name: web",
         "  selector:\n    matchLabels:\n      app.kubernetes.io/name: web\n      tier: front")
    edit(work, "deployment.yaml", "      labels:\n        app.kubernetes.io/name: web",
         "      labels:\n        app.kubernetes.io/name: web\n        tier: front")
    git(work, "commit", "-q", "-am", "Select the front tier")


def undo_the_selector(work):
    git(work, "revert", "--no-edit", "HEAD")


PLAY = """\
---
- name: Deploy the platform
  hosts: clusters
  connection: local
  gather_facts: false
  tasks:
    - name: Sync from git
      block:
        - name: Sync the cluster
          ansible.builtin.include_role:
            name: stacksync.k8s.sync
      rescue:
        - name: Tell the on-call channel
          ansible.builtin.debug:
            msg: "{{ stacksync_results | selectattr('failed') | map(attribute='stack') | list }} failed"
"""

SYNC = ("stacksync.k8s.sync", "-i", "clusters.yml", "-e", "@sources.yml")

SCENARIOS = [
    Scenario("first-sync", "First sync", "Everything in the repository is created.", SYNC),
    Scenario("no-op", "Nothing changed", "The same commit again: nothing is written.", SYNC),
    Scenario("check-diff", "A change, previewed", "A commit changes two objects: `--check --diff` shows what a sync "
             "would change, as YAML, and writes nothing.", (*SYNC, "--check", "--diff"), change),
    Scenario("change", "A change", "The same commit synced.", SYNC),
    Scenario("prune", "A file removed from git", "What left git is pruned.", SYNC, remove),
    Scenario("missing-kubeconfig", "A kubeconfig that does not exist", "The inventory names a kubeconfig file that "
             "is not there.", ("stacksync.k8s.sync", "-i", "clusters-typo.yml", "-e", "@sources.yml")),
    Scenario("dead-server", "A cluster that is down", "Nothing listens at the server of the kubeconfig.",
             ("stacksync.k8s.sync", "-i", "clusters-down.yml", "-e", "@sources.yml"), alone=False),
    Scenario("missing-repo", "A repository that does not exist", "The source names a repository that is not there.",
             ("stacksync.k8s.sync", "-i", "clusters.yml", "-e", "@sources-typo.yml"), alone=False),
    Scenario("bad-yaml", "A file that is not YAML", "A quote is not closed; nothing is written.", SYNC, break_yaml),
    Scenario("failing-apply", "An apply the API server refuses", "The selector of a Deployment cannot change.",
             SYNC, fix_yaml_and_change_the_selector),
    Scenario("fleet", "Two clusters, one failing", "The summary at the end lists every cluster, the failures first.",
             ("stacksync.k8s.sync", "-i", "fleet.yml", "-e", "@sources.yml", "--forks", "1"), undo_the_selector),
    Scenario("role", "The role in a play of one's own", "A failed sync fails the role's sync task; a `rescue` reads "
             "every stack's outcome in `stacksync_results`.",
             ("play.yml", "-i", "clusters-typo.yml", "-e", "@sources.yml"), alone=False),
]


# -- running them ----------------------------------------------------------------------------------------

def collections_path():
    """A collections root holding this checkout (as tests/conftest.py makes it), or STACKSYNC_COLLECTIONS_PATH."""
    if os.environ.get("STACKSYNC_COLLECTIONS_PATH"):
        return Path(os.environ["STACKSYNC_COLLECTIONS_PATH"]).resolve()
    root = ROOT / "build" / "dev-collections"
    link = root / "ansible_collections" / "stacksync" / "k8s"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT, target_is_directory=True)
    return root


def environment(extra=None):
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(("ANSIBLE_", "K8S_AUTH_")) and k not in ("KUBECONFIG", "PYTHONWARNINGS"))
    env.update(GIT_ENV, ANSIBLE_COLLECTIONS_PATH=str(collections_path()), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_RETRY_FILES_ENABLED="false",
               PYTHONWARNINGS="ignore")
    env.update(extra or {})
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(work, kubeconfig, down_port):
    """The scenarios' files in ``work``: the example repository, inventories, sources and a play."""
    shutil.copytree(ROOT / "examples" / "repo", work / "repo")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=work / "repo", check=True, env=dict(os.environ, **GIT_ENV))
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Initial manifests")
    config = yaml.safe_load(Path(kubeconfig).read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{down_port}"
    (work / "down.kubeconfig").write_text(yaml.safe_dump(config))

    def inventory(name, hosts):
        hostvars = dict((h, {"stacksync_kubeconfig": str(k), "ansible_python_interpreter": sys.executable})
                        for h, k in hosts.items())
        (work / name).write_text(yaml.safe_dump({"clusters": {"hosts": hostvars}}, sort_keys=False))

    inventory("clusters.yml", {"my-cluster": kubeconfig})
    inventory("clusters-typo.yml", {"my-cluster": work / "kubeconfig.yml"})
    inventory("clusters-down.yml", {"my-cluster": work / "down.kubeconfig"})
    inventory("fleet.yml", {"prod-a": kubeconfig, "prod-b": work / "prod-b.kubeconfig"})
    base = {"stacksync_cache_dir": str(work / "cache"), "stacksync_discovery_cache_dir": str(work / "discovery")}
    for name, repo in (("sources.yml", work / "repo"), ("sources-typo.yml", work / "repository")):
        (work / name).write_text(yaml.safe_dump(dict(base, stacksync_sources=[
            {"repo": f"file://{repo}", "version": "main", "stack": "demo"}]), sort_keys=False))
    (work / "play.yml").write_text(PLAY)


def normalise(text, work, ports):
    """``text`` with what differs between runs replaced (:data:`NORMALISE`), trailing spaces removed."""
    text = text.replace(str(work), WORK)
    for port, shown in ports.items():
        text = re.sub(rf"(?<![0-9]){port}(?![0-9])", shown, text)
    lines = [line.rstrip() for line in text.splitlines()]
    for pattern, replacement in NORMALISE:
        lines = [pattern.sub(replacement, line) for line in lines]
    return "\n".join(_tables(lines)).strip("\n") + "\n"


#: the tables a sync prints, by their first header cells: which columns are text (left-aligned)
TABLES = {("STACK", "COMMIT"): (0, 1, 7), ("CLUSTER", "STACK"): (0, 1, 2, 3)}


def _summary():
    """plugin_utils/summary.py of this checkout (its ``table`` aligns the tables as the sync does)."""
    if str(collections_path()) not in sys.path:
        sys.path.insert(0, str(collections_path()))
    from ansible_collections.stacksync.k8s.plugins.plugin_utils import summary

    return summary


def _tables(lines):
    """The tables aligned again (a path normalised to another length moves its column) and their SECONDS 0.2."""
    out, i = [], 0
    while i < len(lines):
        cells = re.split(r"\s{2,}", lines[i].strip())
        left = TABLES.get(tuple(cells[:2]))
        if left is None:
            out.append(lines[i])
            i += 1
            continue
        indent, header, rows = lines[i][:len(lines[i]) - len(lines[i].lstrip())], cells, [cells]
        i += 1
        while (i < len(lines) and lines[i].startswith(indent) and not lines[i].startswith(indent + " ")
               and not lines[i].endswith(":") and len(re.split(r"\s{2,}", lines[i].strip())) == len(header)):
            rows.append(re.split(r"\s{2,}", lines[i].strip()))
            i += 1
        if "SECONDS" in header:
            at = header.index("SECONDS")
            rows = [rows[0]] + [[*r[:at], "0.2", *r[at + 1:]] for r in rows[1:]]
        out.extend(indent + line for line in _summary().table([tuple(r) for r in rows], left))
    return out


def _batches(scenarios):
    """The scenarios in runs of one, or of several that change nothing (run at once)."""
    batches = []
    for scenario in scenarios:
        if batches and not scenario.alone and not batches[-1][-1].alone:
            batches[-1].append(scenario)
        else:
            batches.append([scenario])
    return batches


def _run(scenario, work, verbose):
    """The output of ``scenario`` (stdout and stderr as a terminal shows them, in order)."""
    if scenario.prepare:
        scenario.prepare(work)
    started = time.monotonic()
    playbook = str(Path(sys.executable).parent / "ansible-playbook")
    proc = subprocess.run([playbook, *scenario.args], cwd=work, env=environment(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)
    if verbose:
        print(f"{scenario.name:20} {time.monotonic() - started:4.1f} s", file=sys.stderr)
    return proc.stdout


def run_all(names=None, verbose=False):
    """``{name: output}`` of every scenario (all of them run, in order: each builds on the one before)."""
    sys.path.insert(0, str(ROOT))
    from tests.kubesim.simulator import Simulator

    outputs = {}
    with tempfile.TemporaryDirectory(prefix="stacksync-golden-") as tmp:
        work = Path(tmp).resolve()
        sim = Simulator(tls=True, kubeconfig_path=str(work / "kubeconfig")).start()
        try:
            down = free_port()
            setup(work, work / "kubeconfig", down)
            ports = {sim.port: SIM_PORT, down: DOWN_PORT}
            for batch in _batches(SCENARIOS):
                with ThreadPoolExecutor(max_workers=len(batch)) as pool:
                    done = list(pool.map(lambda scenario: _run(scenario, work, verbose), batch))
                for scenario, output in zip(batch, done):
                    if names is None or scenario.name in names:
                        outputs[scenario.name] = f"$ {scenario.command}\n{normalise(output, work, ports)}"
        finally:
            sim.stop()
    return outputs


# -- the goldens and the page that shows them ------------------------------------------------------------

def golden_file(scenario):
    return GOLDEN / f"{SCENARIOS.index(scenario) + 1:02d}-{scenario.name}.txt"


def core_version():
    from ansible.release import __version__

    return ".".join(__version__.split(".")[:2])


def page(outputs):
    """docs/output.md: every scenario's output, as captured."""
    parts = [textwrap.dedent("""\
        # What a sync prints

        The output of `ansible-playbook stacksync.k8s.sync` at its default verbosity, in the runs people make most:
        each block below is a real run against a local Kubernetes API server, as printed (timings and ports
        normalised). The repository is `examples/repo`, the playbook `stacksync.k8s.sync` with `clusters.yml` (one
        host, `my-cluster`, with `stacksync_kubeconfig`) and `sources.yml`:

        ```yaml
        stacksync_sources:
          - repo: file:///tmp/demo/repo
            version: main
            stack: demo
        ```

        Each stack prints a line when it starts writing (what it writes, from which commit) and one when it is done
        (what it did, or its error in one line), then a summary table per cluster, and the playbook ends with a
        line (a table, for several clusters) over every cluster. `HEALTH` says `not checked` unless the sync waited
        for the stack's objects, written or unchanged (`stacksync_wait`, or a stack others depend on; not in check
        mode). A failed stack fails the sync task itself, with the error as its message; ansible-core 2.19 and later also print where it was called from
        (`Origin: ...`: the task of your play that includes the role, or the playbook's). `--diff` shows each
        changed object as YAML, without the annotations the collection stamps, Secret values redacted.

        Each object gets one verb: `created`, `configured` (changed in place), `recreated` (deleted and created
        again because a field the API server does not let change did, with `stacksync_recreate_on_immutable` or the
        `stacksync.io/recreate-on-immutable` annotation: its Pods go with it), `unchanged`, `pruned` or `skipped`;
        check mode says what a sync would do (`would create 1, configure 2, recreate 1`). A recreate also prints a
        warning naming the object and the field; the summary table gets a `RECREATED` column when a stack has one.
        """)]
    for scenario in SCENARIOS:
        parts.append(f"## {scenario.title}\n\n{scenario.about}\n\n```text\n{outputs[scenario.name]}```\n")
    return "\n".join(parts)


def compare(outputs):
    """The differences between ``outputs`` and the goldens (a unified diff per scenario), none when equal."""
    problems = []
    for scenario in SCENARIOS:
        path = golden_file(scenario)
        want = path.read_text() if path.exists() else ""
        if outputs[scenario.name] != want:
            problems.append("".join(difflib.unified_diff(want.splitlines(True), outputs[scenario.name].splitlines(True),
                                                         str(path.relative_to(ROOT)), "this run")))
    if (GOLDEN / "VERSION").exists() and DOC.exists() and DOC.read_text() != page(
            dict((s.name, golden_file(s).read_text()) for s in SCENARIOS if golden_file(s).exists())):
        problems.append("docs/output.md does not show tests/golden/*.txt")
    return problems


def update(outputs):
    GOLDEN.mkdir(exist_ok=True)
    for old in GOLDEN.glob("*.txt"):
        old.unlink()
    for scenario in SCENARIOS:
        golden_file(scenario).write_text(outputs[scenario.name])
    (GOLDEN / "VERSION").write_text(core_version() + "\n")
    DOC.write_text(page(outputs))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.tools.golden", description=__doc__.split("\n\n")[0])
    p.add_argument("--update", action="store_true", help="write tests/golden/*.txt and docs/output.md")
    p.add_argument("--show", metavar="NAME", help=f"print one scenario's output ({', '.join(s.name for s in SCENARIOS)})")
    args = p.parse_args(argv)
    outputs = run_all([args.show] if args.show else None, verbose=True)
    if args.show:
        sys.stdout.write(outputs[args.show])
        return 0
    if args.update:
        update(outputs)
        print(f"wrote {len(outputs)} goldens to {GOLDEN.relative_to(ROOT)} and {DOC.relative_to(ROOT)} "
              f"(ansible-core {core_version()})")
        return 0
    problems = compare(outputs)
    for problem in problems:
        print(problem)
    print(json.dumps({"scenarios": len(outputs), "changed": len(problems)}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
