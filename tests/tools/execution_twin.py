"""What the in-process execution (plugins/plugin_utils/execution.py + stack_action.py) saves per task over a module
process, the way ansible-core runs every other module.

    .venv/bin/python -m tests.tools.execution_twin [--tasks 20] [--repeat 3]

Playbooks of ``--tasks`` tasks on the implicit localhost, each run by ``ansible-playbook`` (CPU seconds of its process
tree: user + system, from the children's resource usage; the least of ``--repeat`` runs), less a playbook of one
``ansible.builtin.debug`` task (start-up), divided by the number of tasks:

* ``ansible.builtin.ping``: the least a module process costs (AnsiballZ built, started, fed, its answer parsed);
* ``ansible.builtin.debug``: an action that runs in the controller's process, no module;
* ``stacksync.k8s.stack_info`` (4 objects, on an in-process simulator) in the controller's process (the default) and
  as a module process (``stacksync_in_process: false``): the saving per task of the twin.

Measured, not asserted: docs/architecture.md quotes the figures.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import COLLECTIONS_ROOT

BIN = Path(sys.executable).parent


def playbook(path, tasks, body):
    lines = ["- hosts: localhost", "  gather_facts: false", "  tasks:"]
    lines += [f"    - {body}"] * tasks
    path.write_text("\n".join(lines) + "\n")
    return path


def cpu_of(playbook_path, extra_vars=None):
    """CPU seconds (user + system) of one ``ansible-playbook`` run and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [str(BIN / "ansible-playbook"), str(playbook_path)]
    for k, v in (extra_vars or {}).items():
        cmd += ["-e", f"{k}={v}"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_ROOT), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit("ansible-playbook failed:\n" + proc.stdout[-3000:] + proc.stderr[-3000:])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def least(repeat, fn, *args):
    return min(fn(*args) for _ in range(repeat))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    from tests.kubesim import Simulator

    with tempfile.TemporaryDirectory() as tmp, Simulator(tls=True) as sim:
        tmp = Path(tmp)
        objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "figures"}}] + [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": "figures"}} for n in "abc"]
        info = "stacksync.k8s.stack_info: " + json.dumps(
            {"name": "figures", "kubeconfig": sim.kubeconfig_path, "discovery_cache_dir": str(tmp / "cache"),
             "resources": objects})
        start = least(args.repeat, cpu_of, playbook(tmp / "one.yml", 1, "ansible.builtin.debug: {msg: x}"))
        rows = [("ansible.builtin.debug (controller's process, no module)", "ansible.builtin.debug: {msg: x}", None),
                ("ansible.builtin.ping (a module process)", "ansible.builtin.ping:", None),
                ("stacksync.k8s.stack_info in the controller's process", info, None),
                ("stacksync.k8s.stack_info as a module process", info, {"stacksync_in_process": "false"})]
        print(f"CPU seconds per task (ansible-playbook and its children, {args.tasks} tasks, least of {args.repeat} "
              f"runs, start-up {start:.2f} s subtracted):")
        per_task = {}
        for label, body, extra in rows:
            path = playbook(tmp / f"p{len(per_task)}.yml", args.tasks, body)
            per_task[label] = (least(args.repeat, cpu_of, path, extra) - start) / args.tasks
            print(f"  {label:<58} {per_task[label]:.3f} s")
        saving = per_task[rows[3][0]] - per_task[rows[2][0]]
        module_process = per_task[rows[1][0]] - per_task[rows[0][0]]
        print(f"  saving of the in-process run per task: {saving:.3f} s (a module process's own cost, ping less "
              f"debug: {module_process:.3f} s)")


if __name__ == "__main__":
    main()
