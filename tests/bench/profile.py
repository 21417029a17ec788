"""Where stacksync's time goes: Ansible start-up, rendering, and the engine's phases and requests.

The Ansible parts are measured as whole ``ansible-playbook`` runs (an empty play, a play that only
renders); the engine (``StackManager``) runs in this process against a fresh cluster of the run's
backend (a simulator, or a real one with ``--real`` / ``--kubeconfig``) with the phases timed, the
requests timed and counted, and cProfile on the calling thread.
"""

import copy
import cProfile
import json
import pstats
import subprocess
import threading
import time

from . import manifests, measure
from .repo import Repo
from .tools import PLAYBOOKS

MODULE_DEFAULT_CONCURRENCY = 16  # the stack module's default (modules/stack.py)
#: the engine's steps timed: (name, path of the object holding it from the manager, attribute)
PHASES = (("prepare", "", "prepare"), ("observe", "observer", "observe"), ("plan", "", "_plan"),
          ("execute", "", "execute"))
IMPORTS = ("from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import auth; "
           "from ansible_collections.stacksync.k8s.plugins.module_utils.engine import manager; "
           "import kubernetes.config, kubernetes.client")


def _timed(fn, name, phases):
    def wrapper(*args, **kwargs):
        start = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            phases[name] = round(phases.get(name, 0.0) + time.monotonic() - start, 3)
    return wrapper


class RequestClock:
    """Wraps ``client.request``: summed seconds spent in requests (over all threads)."""

    def __init__(self, client):
        self.seconds = 0.0
        self._lock = threading.Lock()
        inner = client.request

        def request(*args, **kwargs):
            start = time.monotonic()
            try:
                return inner(*args, **kwargs)
            finally:
                with self._lock:
                    self.seconds += time.monotonic() - start
        client.request = request


def _top(profiler, limit=12):
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:limit]  # by own time
    return [dict(function=f"{path.rsplit('/', 1)[-1]}:{line}({func})", calls=nc, own_s=round(tt, 3), cumulative_s=round(ct, 3))
            for (path, line, func), (_cc, nc, tt, ct, _callers) in rows]


def engine_run(resources, kubeconfig, concurrency):
    """One ``StackManager.sync`` of ``resources``: phases, requests, profile of the calling thread."""
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackManager
    from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client

    client, _namespace = build_client({"kubeconfig": str(kubeconfig)}, maxsize=concurrency)
    clock = RequestClock(client)
    manager = StackManager(client, "bench-profile", concurrency=concurrency)
    phases = {}
    for name, holder, attribute in PHASES:
        obj = getattr(manager, holder) if holder else manager
        setattr(obj, attribute, _timed(getattr(obj, attribute), name, phases))
    own = copy.deepcopy(resources)  # the module owns its arguments; not part of the engine's time
    profiler = cProfile.Profile()
    start = time.monotonic()
    profiler.enable()
    changes = manager.sync(own)
    profiler.disable()
    return dict(seconds=round(time.monotonic() - start, 3), phases=phases, requests=dict(client.counts),
                request_seconds=round(clock.seconds, 3), counts=changes.counts, top=_top(profiler))


def _import_seconds(bin_dir, env):
    start = time.monotonic()
    subprocess.run([str(bin_dir / "python"), "-c", IMPORTS], env=dict(env, PYTHONPATH=env["ANSIBLE_COLLECTIONS_PATH"]), check=True)
    return round(time.monotonic() - start, 2)


def profile(args, workdir, bin_dir, env_for, objects=None):
    """The profile section of the results for ``objects`` (default ``args.objects``; ``env_for(home, kubeconfig)``
    gives a run's environment)."""
    objects = objects or args.objects
    base = workdir / "profile"
    (base / "home").mkdir(parents=True)
    repo = Repo(base / "repo")
    repo.write(manifests.generate(objects), "profile")
    env = env_for(base / "home", base / "kubeconfig")  # also puts the collection on sys.path
    from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import render

    out = dict(objects=objects)
    empty = measure.run([str(bin_dir / "ansible-playbook"), str(PLAYBOOKS / "empty.yml")], env, base / "empty.log")
    rendered = measure.run([str(bin_dir / "ansible-playbook"), str(PLAYBOOKS / "render.yml"), "-e",
                            json.dumps({"bench_repo": str(repo.path)})], env, base / "render.log")
    ping = measure.run([str(bin_dir / "ansible-playbook"), str(PLAYBOOKS / "ping.yml")], env, base / "ping.log")
    out.update(ansible_ping_s=ping.seconds, ansible_ping_cpu_s=ping.cpu)
    out.update(ansible_startup_s=empty.seconds, ansible_startup_cpu_s=empty.cpu, ansible_render_s=rendered.seconds,
               ansible_render_cpu_s=rendered.cpu, module_imports_s=_import_seconds(bin_dir, env))
    start = time.monotonic()
    resources = render(str(repo.path))
    out.update(render_in_process_s=round(time.monotonic() - start, 3),
               module_args_mb=round(len(json.dumps(resources)) / 1e6, 2))
    with args.backend.cluster(base, env) as cluster:
        concurrency = args.concurrency or MODULE_DEFAULT_CONCURRENCY
        out["engine"] = {scenario: engine_run(resources, cluster.kubeconfig, concurrency) for scenario in ("first", "noop")}
    return out


def markdown(prof):
    lines = [f"Where the time goes ({prof['objects']} objects):",
             f"- ansible-playbook start-up (empty play): {prof['ansible_startup_s']:.2f} s ({prof['ansible_startup_cpu_s']:.2f} s CPU)",
             f"- start-up + one module process (ansible.builtin.ping): {prof['ansible_ping_s']:.2f} s "
             f"({prof['ansible_ping_cpu_s']:.2f} s CPU): the fixed cost of any module process is the difference",
             f"- start-up + rendering the repository with the lookup: {prof['ansible_render_s']:.2f} s "
             f"({prof['ansible_render_cpu_s']:.2f} s CPU; render() alone, in process: {prof['render_in_process_s']:.2f} s)",
             f"- module imports (kubernetes client, module_utils) in a fresh Python: {prof['module_imports_s']:.2f} s",
             f"- module arguments (the rendered manifests as JSON): {prof['module_args_mb']:.1f} MB"]
    for scenario, run in prof["engine"].items():
        phases = ", ".join(f"{name.strip('_')} {sec:.2f}" for name, sec in run["phases"].items())
        lines.append(f"- engine, {scenario}: {run['seconds']:.2f} s wall ({phases}); "
                     f"{sum(run['requests'].values())} requests, {run['request_seconds']:.2f} s summed over threads")
        for row in run["top"][:6]:
            lines.append(f"  - {row['function']}: {row['own_s']:.2f} s own, {row['calls']} calls")
    return "\n".join(lines)

