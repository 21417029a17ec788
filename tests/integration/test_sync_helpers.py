"""Helpers of the integration tests: git repos, inventories, runs of role / playbook ``stacksync.k8s.sync``,
and plays on localhost that run a module and save its result (:func:`localhost_play`, :func:`run_play`).

Imported by the ``test_*`` modules of this directory (no tests here).
"""

import contextlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

BIN = Path(sys.executable).parent
ANSIBLE_PLAYBOOK = str(BIN / "ansible-playbook")
REPO_ROOT = Path(__file__).resolve().parents[2]

RECAP_RE = re.compile(
    r"^(?P<host>\S+)\s+:\s+ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)\s+"
    r"failed=(?P<failed>\d+)\s+skipped=(?P<skipped>\d+)\s+rescued=(?P<rescued>\d+)\s+ignored=(?P<ignored>\d+)",
    re.M,
)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "stacksync tests",
    "GIT_AUTHOR_EMAIL": "tests@example.com",
    "GIT_COMMITTER_NAME": "stacksync tests",
    "GIT_COMMITTER_EMAIL": "tests@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def sim_of(handle):
    """The simulator behind a ``kubesim_factory`` / ``kubesim`` handle (or the simulator itself)."""
    return getattr(handle, "sim", None) or handle


def kubeconfig_of(handle):
    return getattr(handle, "kubeconfig", None) or sim_of(handle).kubeconfig_path


def request_log(handle):
    """The simulator's request log: dicts with method, path, query (a dict), verb, code."""
    return list(sim_of(handle).requests)


def clean_env(**extra):
    """Environment for ansible-playbook: collections path from conftest, no ambient cluster credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k != "KUBECONFIG"}
    env.update(GIT_ENV)
    env.update(
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_DEPRECATION_WARNINGS="false",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_RETRY_FILES_ENABLED="false",
        ANSIBLE_HOST_KEY_CHECKING="false",
        PYTHONWARNINGS="ignore",
    )
    env.update(extra)
    return env


class GitRepo:
    """A real git repository in a temp dir, reachable through a ``file://`` URL."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    @property
    def url(self):
        return "file://" + str(self.path)

    def git(self, *args):
        env = dict(os.environ, **GIT_ENV)
        return subprocess.run(["git", *args], cwd=self.path, env=env, check=True, capture_output=True,
                              text=True).stdout.strip()

    def write(self, relpath, data):
        """Write a manifest file: ``data`` is a dict / list of dicts (dumped as YAML) or text."""
        target = self.path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, dict):
            data = yaml.safe_dump(data, sort_keys=False)
        elif isinstance(data, list):
            data = yaml.safe_dump_all(data, sort_keys=False)
        target.write_text(data)

    def remove(self, relpath):
        self.git("rm", "-q", relpath)

    def commit(self, message):
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")


def configmap(name, namespace, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": data}


def namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def write_inventory(path, hosts, **group_vars):
    """Inventory with one host per cluster; ``hosts`` maps a host name to its variables."""
    hostvars = {}
    for name, variables in hosts.items():
        hostvars[name] = dict({"ansible_python_interpreter": sys.executable}, **variables)
    Path(path).write_text(yaml.safe_dump({"all": {"hosts": hostvars, "vars": group_vars}}))
    return str(path)


class Run:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.recap = {m["host"]: {k: int(v) for k, v in m.groupdict().items() if k != "host"}
                      for m in RECAP_RE.finditer(proc.stdout)}

    @property
    def output(self):
        return self.stdout + "\n" + self.stderr

    def tail(self, n=6000):
        return "--- stdout ---\n" + self.stdout[-n:] + "\n--- stderr ---\n" + self.stderr[-n:]

    def summaries(self):
        """Lines of the sync's summary per host (printed at the end by stacksync.k8s.sources), unindented once:
        the table's lines, then per stack ``<stack>:`` and its details indented by two spaces."""
        out = {}
        for m in re.finditer(r"^stacksync summary \[(?P<host>[^\]]+)\][^\n]*\n(?P<body>(?:  [^\n]*\n?)*)",
                             self.stdout, re.M):
            out[m["host"]] = [line[2:] for line in m["body"].splitlines()]
        return out

    def summary_rows(self):
        """The summary table per host: ``{host: {stack: {column: value}}}`` (columns lower-cased)."""
        out = {}
        for host, lines in self.summaries().items():
            start = next(i for i, line in enumerate(lines) if line.startswith("STACK "))
            header = lines[start].lower().split()
            rows = {}
            for line in lines[start + 1:]:
                if line.startswith(" ") or line.endswith(":"):
                    break
                cells = re.split(r"\s{2,}", line.strip())  # columns are two spaces apart; a cell has single ones
                rows[cells[0]] = dict(zip(header, cells))
            out[host] = rows
        return out


def run_playbook(inventory, extra_vars, *args, playbook="stacksync.k8s.sync", env=None, timeout=600, cwd=None):
    """``ansible-playbook <playbook> -i inventory -e @vars.json [args]`` as a subprocess."""
    vars_file = Path(inventory).with_name("extra-vars.json")
    vars_file.write_text(json.dumps(extra_vars))
    cmd = [ANSIBLE_PLAYBOOK, str(playbook), "-i", str(inventory), "-e", "@" + str(vars_file), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or clean_env(), cwd=cwd)
    return Run(proc)


# -- plays on localhost that run a module and save its registered result ---------------------------------------


def localhost_play(tasks, saved="r"):
    """A play on localhost: ``tasks`` (YAML text of tasks, indented by four spaces), then the value of the
    expression ``saved`` (a registered result) written as JSON to the file ``out`` (check and diff mode off)."""
    return """
- hosts: localhost
  gather_facts: false
  tasks:
""" + tasks + """    - name: save result
      check_mode: false
      diff: false
      ansible.builtin.copy:
        content: "{{ SAVED | to_json }}"
        dest: "{{ out }}"
""".replace("SAVED", saved)


#: the options of every module task of these plays (:func:`module_task`): the stack, the cluster, the namespaces
TARGET = {"name": "{{ stack }}", "kubeconfig": "{{ kc }}", "record_namespace": "{{ ns }}", "namespace": "{{ ns }}"}


def module_task(module, options, name="sync", **keywords):
    """YAML text of a task of ``stacksync.k8s.<module>`` with :data:`TARGET` and ``options`` (which win), registering
    ``r``, with the task ``keywords`` (``ignore_errors``, ``async``, ...); indented for :func:`localhost_play`."""
    task = {"name": name, "stacksync.k8s." + module: dict(TARGET, **options), "register": "r", **keywords}
    return textwrap.indent(yaml.safe_dump([task], sort_keys=False, width=1000), "    ")


class Played:
    """A finished ``ansible-playbook`` run: what its play saved to ``out`` (None if nothing) and its output."""

    def __init__(self, result, stdout, stderr):
        self.result, self.stdout, self.stderr = result, stdout, stderr

    @property
    def log(self):
        return self.stdout + self.stderr


def run_play(tmp_path, playbook, variables, *args, interpreter=True, inventory="localhost,", env=None, timeout=300):
    """``ansible-playbook -i <inventory> -c local`` of ``playbook`` (its text) with ``variables`` and ``out`` (the
    file :func:`localhost_play` saves to) as extra variables, then ``args``; fails the test unless it exits 0.

    :param interpreter: pass this Python as ``ansible_python_interpreter``.
    :param env: environment variables to set (a ``None`` value removes one).
    :returns: :class:`Played`.
    """
    play = tmp_path / "play.yml"
    play.write_text(playbook)
    out = tmp_path / "result.json"
    with contextlib.suppress(FileNotFoundError):
        out.unlink()  # a result is this run's
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(dict(variables, out=str(out))))
    cmd = [ANSIBLE_PLAYBOOK, "-i", inventory, "-c", "local",
           *(["-e", "ansible_python_interpreter=" + sys.executable] if interpreter else []),
           "-e", "@" + str(extra), str(play), *args]
    environment = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=environment)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return Played(json.loads(out.read_text()) if out.exists() else None, proc.stdout, proc.stderr)


def client_fixture():
    """The fixture ``client`` of a test module: the ``admin`` client of tests/conftest.py (whose ``ns`` fixture, named
    after the module's ``NS_PREFIX``, makes a namespace per test)."""

    @pytest.fixture(scope="module")
    def client(admin):
        return admin

    return client
