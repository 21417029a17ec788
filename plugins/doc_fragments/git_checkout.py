# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the modules that check out git sources on the controller share (checkout, sources): ``plugin_utils/checkout.py``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  cache_dir:
    description:
      - Directory on the controller under which checkouts are cached, one per repository and version; the name of a
        checkout is derived from its URL without credentials.
    type: path
    default: ~/.cache/stacksync
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  platform:
    platforms: posix
notes:
  - Needs the C(git) command on the controller. The repository URL (and any credentials in it) is given to each
    C(git fetch) and never stored in the checkout.
"""
