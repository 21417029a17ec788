"""The four scenarios of issue 7, each a commit of the generated repository."""

from . import manifests


class State:
    """The desired objects of one tool's run through the scenarios (mutated in order)."""

    def __init__(self, n):
        self.entries = manifests.generate(n)
        self.changed = 0
        self.removed = 0


def first(state):
    return f"first sync of {len(state.entries)} objects"


def noop(state):
    return "no change"


def changed(state):
    state.changed = manifests.change_tenth(state.entries)
    return f"{state.changed} objects changed"


def removed(state):
    before = len(state.entries)
    state.entries = manifests.remove_tenth(state.entries)
    state.removed = before - len(state.entries)
    return f"{state.removed} objects removed"


SCENARIOS = {"first": first, "noop": noop, "changed": changed, "removed": removed}
