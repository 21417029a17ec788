"""The scenarios of issue 7 (and issue 32's ``check``: a no-op in check mode), each a commit of the generated
repository. ``python -m tests.bench`` runs first, noop, changed, removed by default; ``check`` when asked."""

from . import manifests


class State:
    """The desired objects of one tool's run through the scenarios (mutated in order)."""

    def __init__(self, n, stacks=1):
        self.entries = manifests.generate(n)
        if stacks > 1:
            manifests.split_stacks(self.entries, stacks)
        self.stacks = stacks
        self.changed = 0
        self.removed = 0


def first(state):
    return f"first sync of {len(state.entries)} objects"


def noop(state):
    return "no change"


def check(state):
    return "no change, in check mode"


def changed(state):
    state.changed = manifests.change_tenth(state.entries)
    return f"{state.changed} objects changed"


def removed(state):
    before = len(state.entries)
    state.entries = manifests.remove_tenth(state.entries)
    state.removed = before - len(state.entries)
    return f"{state.removed} objects removed"


def snapshot(entries):
    """``{path: (rev, entry)}``: the revisions of ``entries`` now (entries are changed in place)."""
    return {e.path: (e.rev, e) for e in entries}


def writes(before, after):
    """What a scenario asks the server to write: ``(entries to apply, entries to delete)`` between the
    :func:`snapshot` ``before`` (empty before the first sync) and the entries ``after``."""
    now = set(e.path for e in after)
    return ([e for e in after if e.path not in before or before[e.path][0] != e.rev],
            [entry for path, (_rev, entry) in before.items() if path not in now])


SCENARIOS = {"first": first, "noop": noop, "check": check, "changed": changed, "removed": removed}
DEFAULT = ("first", "noop", "changed", "removed")
#: scenarios whose tools run in check mode (``ansible-playbook --check``, ``kubectl --dry-run=server``)
CHECK_MODE = ("check",)
