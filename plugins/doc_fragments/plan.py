# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options ``prune_grace``, ``emit_plan`` and ``plan_file`` (issue 29) of stack, stack_info and sources."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  prune_grace:
    description:
      - A grace period for prunes (a duration such as V(90s), V(15m), V(1h), V(2d), V(1w), V(1h30m), or a number of
        seconds; not set or V(0) means none). An object that left git is first B(marked) (annotation
        C(stacksync.io/prune-marked-at), the API server's time of the mark) and deleted by the first run once the
        grace has passed; back in git before that, the mark is removed and nothing was lost.
      - Times are the API server's, never the controller's clock. The mark's time is the one the server stamps on the
        mark's write (the C(managedFields) entry of field manager C(<field_manager>-prune-mark), second precision,
        rounded up); a run's time is the C(Date) header of the server's answers during the run (truncated to the
        second). So an object is never deleted before its grace has passed on the server's clock. A server whose
        answers carry no C(Date) header marks and deletes nothing.
      - An object counts toward O(stacksync.k8s.stack#module:max_prune) in the run that deletes it, not when it is
        marked. A Namespace or CRD whose objects are still waiting (or are marked now) waits with them. Not applied with
        O(stacksync.k8s.stack#module:state=absent), which deletes the whole stack on purpose.
      - Check mode and the results list what is marked (RV(stacksync.k8s.stack#module:marked), with C(prune_after)) and
        what waits (in RV(stacksync.k8s.stack#module:skipped_objects) with the code V(grace), the time to prune after
        in C(prune_after), and that time in its reason).
    type: str
  emit_plan:
    description:
      - In check mode, return the B(plan) of the run as RV(stacksync.k8s.stack#module:plan), what a real run would do,
        which a later run can be held to (O(stacksync.k8s.stack#module:approved_plan)).
      - A plan holds, per stack, the commit it syncs, the number of objects to create and to change with a digest of
        them, and, one by one, the objects to delete, to mark for pruning and waiting for their prune grace, each with
        its uid, resourceVersion and decision fingerprint (what decides whether it is pruned, that is its uid, stack label,
        owner mark, the C(stacksync.io) annotations that decide a prune, its ownerReferences and whether it is being
        deleted; not its status, its resourceVersion or other fields), all sealed by sha256 digests.
      - A check that emits a plan does not refuse deletions over O(stacksync.k8s.stack#module:max_prune); it lists
        them, marks the stack V(over_budget) in the plan and warns; a run deletes them only with the plan approved.
      - Ignored outside check mode.
    type: bool
    default: false
  plan_file:
    description:
      - In check mode, also write the plan (as with O(emit_plan)) to this file on the controller, as JSON; the file
        a later run can be given as O(stacksync.k8s.stack#module:approved_plan).
      - Ignored outside check mode.
    type: path
"""
