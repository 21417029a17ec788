# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument spec of ``stacksync.k8s.checkout`` (an action plugin; its module file only documents it)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

ARGUMENT_SPEC = dict(
    repo=dict(type="str", required=True, no_log=True),
    version=dict(type="str", default="HEAD"),
    path=dict(type="str", default=""),
    stack=dict(type="str", default=""),
    cache_dir=dict(type="path", default="~/.cache/stacksync"),
)
