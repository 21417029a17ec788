#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: checkout
short_description: Check out a directory of a git repository on the controller, once per run
version_added: 0.2.0
description:
  - Fetches O(version) of O(repo) into a cache directory on the controller with the C(git) command and checks it out
    (a detached commit; local changes and untracked files are discarded), the way M(stacksync.k8s.sources) checks
    out its sources. Role C(stacksync.k8s.source) is this task run once per play.
  - One checkout directory per repository and version under O(cache_dir).
  - A checkout is fetched once per run of the task, whatever the number of hosts and forks; a lock on the checkout directory serialises
    runs working on one checkout.
  - O(path) and O(stack) are checked before anything is fetched.
options:
  repo:
    description:
      - Repository URL (C(https://), C(ssh://), C(file://), scp-like C(git@host:org/repo.git) or a local path).
      - Only these transports are allowed, and git's C(protocol.allow) is set to them for every git command.
        C(http://), C(git://), remote helpers such as C(ext::) or C(fd::), and a URL beginning with C(-) are refused
        before git runs.
      - Never returned or printed; error messages name the URL without its credentials (C(user:token@) and the
        query string, such as C(?private_token=...), removed).
    type: str
    required: true
  version:
    description:
      - Branch, tag or commit (full or abbreviated) to check out. V(HEAD) is the remote's default branch.
      - A name C(git check-ref-format) refuses (C(..), C(@{), C(~), C(^), C(:), spaces, ...) or one beginning with
        C(-) or C(+) is refused before git runs; it is never read as a git option.
    type: str
    default: HEAD
  path:
    description: Directory inside the repository that holds the manifests; must stay inside the repository.
    type: str
    default: ""
  stack:
    description:
      - Stack name returned as RV(stack). Defaults to the name the C(stacksync.k8s.stack_name) filter derives from
        O(repo) and O(path).
      - Must be a valid label value (at most 63 characters, alphanumeric at both ends).
    type: str
    default: ""
extends_documentation_fragment:
  - stacksync.k8s.git_checkout
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    details: Runs on the controller, whatever the host; it never connects to the host.
  check_mode:
    support: full
    details: The checkout is updated in check mode too (it is the controller's cache); the task never reports a change.
  diff_mode:
    support: none
notes:
  - Run it with C(run_once) (as role C(stacksync.k8s.source) does) to set the same facts for every host.
seealso:
  - module: stacksync.k8s.sources
author:
  - stacksync.k8s contributors (@stacksync)
"""

EXAMPLES = r"""
- name: Check out the manifests of a tag
  stacksync.k8s.checkout:
    repo: https://github.com/example/platform.git
    version: v1.4.2
    path: deploy
  run_once: true
  register: platform

- name: Render the checked-out manifests
  ansible.builtin.set_fact:
    manifests: "{{ query('stacksync.k8s.manifests', platform.path, root=platform.checkout) }}"
"""

RETURN = r"""
repo:
  description: The repository URL without credentials.
  returned: success
  type: str
  sample: https://github.com/example/platform.git
version:
  description: The version checked out, as given.
  returned: success
  type: str
  sample: v1.4.2
checkout:
  description: The checkout directory (the root of the repository) on the controller.
  returned: success
  type: str
  sample: /home/ops/.cache/stacksync/github.com-example-platform-3f0c9a1b2d4e5f60
path:
  description: The directory O(path) in the checkout.
  returned: success
  type: str
  sample: /home/ops/.cache/stacksync/github.com-example-platform-3f0c9a1b2d4e5f60/deploy
commit:
  description: The commit checked out.
  returned: success
  type: str
  sample: 4f1c0e9a1b2c3d4e5f60718293a4b5c6d7e8f901
stack:
  description: O(stack), or the stack name derived from O(repo) and O(path) (filter C(stacksync.k8s.stack_name)).
  returned: success
  type: str
  sample: platform-deploy-3f0c9a1b2d
fetched:
  description: Whether this run fetched the checkout (false when another host's run of the task already did).
  returned: success
  type: bool
  sample: true
reason:
  description:
    - Why the task failed, V(invalid) (O(path) or O(stack)), V(refused) (O(repo) or O(version) cannot be given to
      git, see O(repo) and O(version)), V(checkout) (git failed) or V(no directory) (O(path) is not a directory at
      that commit), next to the message in C(msg).
  returned: failure
  type: str
  sample: checkout
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.checkout_spec import ARGUMENT_SPEC  # noqa: E402


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="stacksync.k8s.checkout runs on the controller as an action plugin; it has no module process")


if __name__ == "__main__":
    main()
