"""The stack_name and redact_url filters, in-process and in a playbook."""

import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.stacksync.k8s.plugins.filter.redact_url import FilterModule as RedactFilters
from ansible_collections.stacksync.k8s.plugins.filter.stack_name import FilterModule as StackFilters


def test_filters():
    stack = StackFilters().filters()["stack_name"]
    redact = RedactFilters().filters()["redact_url"]
    assert stack("https://u:t@github.com/acme/infra.git", path="clusters/prod") == "github.com-acme-infra-clusters-prod"
    assert redact("https://u:t@github.com/acme/infra.git") == "https://github.com/acme/infra.git"
    with pytest.raises(AnsibleFilterError):
        stack("")
    with pytest.raises(AnsibleFilterError):
        redact(None)


def test_filter_in_a_playbook(tmp_path):
    playbook = tmp_path / "pb.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.debug:\n"
        "        msg: \"{{ 'https://user:S3cretTok@github.com/acme/infra.git' | stacksync.k8s.stack_name(path='clusters/prod') }}"
        " {{ 'https://user:S3cretTok@github.com/acme/infra.git' | stacksync.k8s.redact_url }}\"\n")
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    out = subprocess.run([ansible_playbook, "-i", "localhost,", "-c", "local",
                          "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "github.com-acme-infra-clusters-prod https://github.com/acme/infra.git" in out.stdout
    assert "S3cretTok" not in out.stdout
