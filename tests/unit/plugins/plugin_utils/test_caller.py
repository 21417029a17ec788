"""caller.py: which task a failed sync is shown at (the user's, not the collection's own task file)."""

import os

from ansible_collections.stacksync.k8s.plugins.plugin_utils.caller import caller_ds, in_collection

COLL = "/home/me/.ansible/collections/ansible_collections/stacksync/k8s"


class Obj:
    """A playbook object as ansible-core has them: a path (``file:line``), a data structure, a parent."""

    def __init__(self, path, parent=None, task=True, play=None):
        self.path, self._parent, self._ds = path, parent, {"at": path}
        if task:
            self.action = "x"
        if play is not None:
            self._play = play

    def get_path(self):
        return self.path

    def get_ds(self):
        return self._ds


def role_task(parent):
    block = Obj("", parent=parent, task=False)
    return Obj(COLL + "/roles/sync/tasks/main.yml:35", parent=block)


def test_a_role_task_is_shown_at_the_include_of_the_users_play():
    include = Obj("/srv/site.yml:9", parent=Obj("/srv/site.yml:7", task=False))
    assert caller_ds(role_task(include)) == {"at": "/srv/site.yml:9"}


def test_the_collections_playbook_is_shown_at_its_include_never_at_the_role():
    include = Obj(COLL + "/playbooks/sync.yml:19", parent=Obj(COLL + "/playbooks/sync.yml:17", task=False))
    assert caller_ds(role_task(include)) == {"at": COLL + "/playbooks/sync.yml:19"}


def test_a_role_of_a_plays_roles_section_is_shown_at_the_play():
    play = Obj("/srv/site.yml:1", task=False)
    block = Obj("", task=False, play=play)
    task = Obj(COLL + "/roles/sync/tasks/main.yml:35", parent=block)
    assert caller_ds(task) == {"at": "/srv/site.yml:1"}


def test_a_task_of_the_users_own_keeps_its_origin_and_unknown_paths_change_nothing():
    assert caller_ds(Obj("/srv/site.yml:12", parent=Obj("/srv/site.yml:3"))) is None
    assert caller_ds(role_task(Obj(""))) is None  # nothing with a path above it

    class Broken(Obj):
        def get_path(self):
            raise AttributeError("another ansible-core")

    assert caller_ds(Broken("x")) is None


def test_a_development_checkout_counts_as_the_collection(tmp_path):
    root = tmp_path / "checkout"
    (root / "roles").mkdir(parents=True)
    path = str(root / "roles" / "main.yml") + ":3"
    assert in_collection(path, os.path.realpath(str(root))) and not in_collection(path)
    assert not in_collection("") and in_collection(COLL + "/roles/x.yml:1")
