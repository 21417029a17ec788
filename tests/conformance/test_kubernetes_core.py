"""kubernetes.core's k8s / k8s_info modules against the cluster under test (skipped when not installed)."""

import importlib.util
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest


def _kubernetes_core_root():
    """The collections root holding kubernetes.core (the `ansible` package's site-packages), or None."""
    try:
        spec = importlib.util.find_spec("ansible_collections.kubernetes.core")
    except ImportError:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).parents[2]


KUBERNETES_CORE_ROOT = _kubernetes_core_root()
pytestmark = pytest.mark.skipif(KUBERNETES_CORE_ROOT is None, reason="kubernetes.core collection is not installed")

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    ns: {ns}
  tasks:
    - kubernetes.core.k8s:
        kubeconfig: {kubeconfig}
        state: present
        apply: true
        server_side_apply: {{field_manager: stacksync-test}}
        definition:
          - {{apiVersion: v1, kind: Namespace, metadata: {{name: "{{{{ ns }}}}"}}}}
          - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: c1, namespace: "{{{{ ns }}}}", labels: {{tier: a}}}}, data: {{k: v}}}}
    - kubernetes.core.k8s_info:
        kubeconfig: {kubeconfig}
        kind: ConfigMap
        namespace: "{{{{ ns }}}}"
        label_selectors: ["tier=a"]
      register: found
    - assert:
        that: found.resources | map(attribute='metadata.name') | list == ['c1']
    - kubernetes.core.k8s:
        kubeconfig: {kubeconfig}
        state: absent
        kind: Namespace
        name: "{{{{ ns }}}}"
"""


def test_k8s_and_k8s_info(kube, tmp_path):
    ns = f"kcore-{secrets.token_hex(3)}"
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK.format(ns=ns, kubeconfig=kube.kubeconfig))
    playbook = str(Path(sys.executable).parent / "ansible-playbook")
    collections = os.pathsep.join(filter(None, [os.environ.get("ANSIBLE_COLLECTIONS_PATH"), str(KUBERNETES_CORE_ROOT)]))
    env = {**os.environ, "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_COLLECTIONS_PATH": collections}
    proc = subprocess.run([playbook, "-i", "localhost,", "-c", "local", str(book)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout
