"""Modules under a Python without the `kubernetes` package fail with a clear, actionable message."""

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Run {module} under a Python without kubernetes
      {module}:
        name: needs-kubernetes
        resources: []
      register: result
      ignore_errors: true
    - name: Save the result
      ansible.builtin.copy:
        content: "{{{{ result | to_json }}}}"
        dest: {out}
        mode: "0600"
      vars:
        ansible_python_interpreter: {controller_python}
"""


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A virtual environment with nothing installed (no pip, no kubernetes)."""
    target = tmp_path_factory.mktemp("bare-venv")
    venv.EnvBuilder(with_pip=False).create(target)
    return target / "bin" / "python"


@pytest.mark.parametrize("module", ["stacksync.k8s.stack", "stacksync.k8s.stack_info"])
def test_module_names_the_package_and_the_python_to_install_it_in(bare_python, tmp_path, module):
    book = tmp_path / "play.yml"
    out = tmp_path / "result.json"
    book.write_text(PLAYBOOK.format(module=module, out=out, controller_python=sys.executable))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", f"ansible_python_interpreter={bare_python}", str(book)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["failed"] is True
    assert "kubernetes>=24.2.0" in result["msg"]
    assert f"in the Python at {bare_python}" in result["msg"]
