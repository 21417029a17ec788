"""The stack_name and redact_url filters, in-process and in a playbook."""

import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.stacksync.k8s.plugins.filter.redact_url import FilterModule as RedactFilters
from ansible_collections.stacksync.k8s.plugins.filter.stack_name import FilterModule as StackFilters
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import stack_name


def test_filters():
    stack = StackFilters().filters()["stack_name"]
    redact = RedactFilters().filters()["redact_url"]
    new = stack("https://u:t@github.com/acme/infra.git", path="clusters/prod")
    assert new == stack_name("https://github.com/acme/infra", "clusters/prod") and new.startswith("infra-clusters-prod-")
    assert stack("git@github.com:acme/infra.git", "clusters/prod") == new
    assert stack("https://u:t@github.com/acme/infra.git", path="clusters/prod", legacy=True) == \
        "github.com-acme-infra-clusters-prod"
    assert redact("https://u:t@github.com/acme/infra.git") == "https://github.com/acme/infra.git"
    assert redact("https://github.com/acme/infra.git?access_token=T0k") == "https://github.com/acme/infra.git"
    with pytest.raises(AnsibleFilterError):
        stack("https://h/x", legacy="maybe")
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
        " {{ 'https://user:S3cretTok@github.com/acme/infra.git?access_token=Q7tok' | stacksync.k8s.redact_url }}"
        " {{ 'https://github.com/acme/infra.git' | stacksync.k8s.stack_name(path='clusters/prod', legacy=true) }}\"\n")
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    out = subprocess.run([ansible_playbook, "-i", "localhost,", "-c", "local",
                          "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "{} https://github.com/acme/infra.git github.com-acme-infra-clusters-prod".format(stack_name(
        "https://github.com/acme/infra.git", "clusters/prod")) in out.stdout
    assert "S3cretTok" not in out.stdout and "Q7tok" not in out.stdout
