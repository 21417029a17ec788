"""rendercache.py: which sources render the same for every host, and their render kept for every host and later run
while the files stay the same."""

import json
import multiprocessing
import os
import time

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import rendercache as rc

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n"


def files_under(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def tree(tmp_path, files):
    root = files_under(tmp_path / "checkout", files)
    (root / ".git").mkdir(parents=True, exist_ok=True)
    return root


@pytest.mark.parametrize("files, independent", [
    ({"apps/a.yaml": CM % "a", "apps/sub/b.json": '{"kind": "ConfigMap"}'}, True),
    ({"apps/a.yaml": CM % "a", "apps/b.yaml.j2": CM % "{{ inventory_hostname }}"}, False),  # a template
    ({"apps/a.yaml": CM % "a", "apps/B.YML.J2": CM % "b"}, False),
    ({"apps/kustomization.yaml": "resources: [a.yaml]\n", "apps/a.yaml": CM % "a"}, False),
    ({"apps/a.yaml": CM % "a" + "data:\n  k: !vault |\n    $ANSIBLE_VAULT;1.1;AES256\n    3132\n"}, False),
    ({"apps/a.yaml": "$ANSIBLE_VAULT;1.1;AES256\n6162\n"}, False),  # a vault-encrypted file
    ({"apps/a.yaml": CM % "a", "apps/.hidden/t.yaml.j2": CM % "{{ x }}"}, True),  # the render skips hidden entries
    ({"other/t.yaml.j2": CM % "{{ x }}", "apps/a.yaml": CM % "a"}, True),  # outside the source's directory
])
def test_a_source_renders_the_same_for_every_host_only_without_templates_kustomize_or_vault(tmp_path, files, independent):
    root = tree(tmp_path, files)
    assert rc.host_independent(str(root / "apps"), str(root)) is independent


def test_symlinks_are_followed_within_the_checkout_only(tmp_path):
    root = tree(tmp_path, {"apps/a.yaml": CM % "a", "shared/t.yaml.j2": CM % "{{ x }}"})
    (root / "apps" / "loop").symlink_to(root / "apps")
    assert rc.host_independent(str(root / "apps"), str(root)) is True  # a loop ends the walk there
    (root / "apps" / "shared").symlink_to(root / "shared")
    assert rc.host_independent(str(root / "apps"), str(root)) is False  # the template, through the link
    (root / "apps" / "shared").unlink()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "b.yaml").write_text(CM % "b")
    (root / "apps" / "out").symlink_to(outside)
    assert rc.host_independent(str(root / "apps"), str(root)) is False


class Renders:
    def __init__(self, manifests):
        self.manifests = manifests
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.manifests


TREE, OTHER_TREE = "a" * 40, "b" * 40


def test_a_render_is_kept_for_the_other_hosts_and_later_runs_of_the_same_files(tmp_path):
    git = tree(tmp_path, {}) / ".git"
    manifests = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]
    render, checks = Renders(manifests), []
    shareable = lambda: checks.append(1) or True  # noqa: E731
    key = TREE + "-k"
    assert rc.rendered_once(str(git), key, shareable, render) == (manifests, False)
    assert rc.rendered_once(str(git), key, shareable, render) == (manifests, True)  # another host, or a later run
    assert render.calls == 1 and len(checks) == 1
    assert rc.rendered_once(str(git), TREE + "-other-source", shareable, render) == (manifests, False)
    assert len(list(git.glob(rc.PREFIX + "*.json"))) == 2  # the renders of one tree are kept side by side
    assert rc.rendered_once(str(git), OTHER_TREE + "-k", shareable, render) == (manifests, False)  # files changed
    assert render.calls == 3
    assert [p.name for p in git.glob(rc.PREFIX + "*.json")] == [rc.PREFIX + OTHER_TREE + "-k.json"]  # old trees dropped


def test_a_source_that_is_not_shareable_is_rendered_by_every_host_and_checked_once(tmp_path):
    git = tree(tmp_path, {}) / ".git"
    render, checks = Renders([]), []
    shareable = lambda: checks.append(1) or False  # noqa: E731
    for _ in range(3):
        assert rc.rendered_once(str(git), TREE + "-k", shareable, render) == ([], False)
    assert render.calls == 3 and len(checks) == 1
    kept = json.loads((git / (rc.PREFIX + TREE + "-k.json")).read_text())
    assert kept == {"shared": False, "manifests": None}  # only the verdict is kept


def test_a_failed_render_keeps_nothing(tmp_path):
    git = tree(tmp_path, {}) / ".git"

    def broken():
        raise ValueError("a render error")

    with pytest.raises(ValueError):
        rc.rendered_once(str(git), TREE + "-k", lambda: True, broken)
    assert not list(git.glob(rc.PREFIX + "*.json"))
    assert rc.rendered_once(str(git), TREE + "-k", lambda: True, Renders([1])) == ([1], False)


@pytest.mark.parametrize("content", ["not JSON", '{"manifests": [1]}', '["shared"]', '{"shared": "yes"}'])
def test_a_kept_file_that_is_not_a_render_is_not_read(tmp_path, content):
    git = tree(tmp_path, {}) / ".git"
    (git / (rc.PREFIX + TREE + "-k.json")).write_text(content)
    assert rc.rendered_once(str(git), TREE + "-k", lambda: True, Renders([2])) == ([2], False)
    assert rc.rendered_once(str(git), TREE + "-k", lambda: True, Renders([3])) == ([2], True)


def test_the_key_is_everything_the_render_is_made_of(tmp_path):
    root = str(tmp_path / "checkout")
    options = dict(include=None, exclude=["legacy"], trusted=False)
    key = rc.cache_key(TREE, root + "/apps", root, options)
    assert key.startswith(TREE + "-") and key == rc.cache_key(TREE, root + "/apps", root, dict(options))
    others = [rc.cache_key(OTHER_TREE, root + "/apps", root, options), rc.cache_key(TREE, root + "/web", root, options),
              rc.cache_key(TREE, root, root, options), rc.cache_key(TREE, root + "/apps", root, dict(options, exclude=[]))]
    assert len(set([key, *others])) == 5
    # the same files checked out elsewhere (another cache directory) make the same key
    assert rc.cache_key(TREE, "/elsewhere/apps", "/elsewhere", options) == key


def test_a_render_kept_by_other_code_is_not_read(tmp_path, monkeypatch):
    root = str(tmp_path)
    key = rc.cache_key(TREE, root, root, {})
    monkeypatch.setattr(rc, "_CODE", ["another version"])
    assert rc.cache_key(TREE, root, root, {}) != key


def _host(git, log):
    def render():
        with open(log, "a") as f:
            f.write("rendered\n")
        time.sleep(0.3)
        return [{"n": os.getpid()}]

    manifests, shared = rc.rendered_once(git, TREE + "-k", lambda: True, render)
    with open(log, "a") as f:
        f.write(f"{shared} {manifests[0]['n']}\n")


def test_hosts_in_parallel_forks_share_the_first_render(tmp_path):
    git, log = str(tree(tmp_path, {}) / ".git"), str(tmp_path / "log")
    ctx = multiprocessing.get_context("fork")
    hosts = [ctx.Process(target=_host, args=(git, log)) for _ in range(4)]
    for p in hosts:
        p.start()
    for p in hosts:
        p.join(30)
    with open(log) as f:
        lines = f.read().split("\n")[:-1]
    assert lines.count("rendered") == 1
    outcomes = [line.split() for line in lines if line != "rendered"]
    assert len(outcomes) == 4 and sorted(s for s, _n in outcomes) == ["False", "True", "True", "True"]
    assert len(set(n for _s, n in outcomes)) == 1  # every host got the first host's render


# -- the src of stacksync.k8s.stack: kept by the names and bytes of its files -----------------------------------

def src_dir(tmp_path, files):
    return files_under(tmp_path / "src", files)


def test_a_src_is_keyed_by_the_names_and_bytes_of_its_files(tmp_path):
    root = src_dir(tmp_path, {"a.yaml": CM % "a", "sub/b.json": '{"kind": "ConfigMap"}'})
    key = rc.content_key(str(root), ["src", {}])
    assert key and key == rc.content_key(str(root), ["src", {}])
    assert rc.content_key(str(root), ["src", {"include": ["*.yaml"]}]) != key  # other options
    (root / "a.yaml").write_text(CM % "A")
    changed = rc.content_key(str(root), ["src", {}])
    assert changed != key
    (root / "a.yaml").rename(root / "c.yaml")
    assert rc.content_key(str(root), ["src", {}]) not in (key, changed)  # the same bytes under another name
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.yaml.j2").write_text("{{ x }}")  # the render skips hidden entries
    assert rc.content_key(str(root), ["src", {}]) is not None
    single = rc.content_key(str(root / "c.yaml"), ["src", {}])
    assert single and single != rc.content_key(str(root / "sub" / "b.json"), ["src", {}])


def test_a_file_moved_to_another_directory_or_its_bytes_split_otherwise_change_the_key(tmp_path):
    first = rc.content_key(str(src_dir(tmp_path / "1", {"sub/b.yaml": CM % "b"})), ["src", {}])
    moved = rc.content_key(str(src_dir(tmp_path / "2", {"b.yaml": CM % "b"})), ["src", {}])
    assert first.split("-")[0] != moved.split("-")[0]
    # the names and bytes of two files, one byte moved from the end of one to the start of the other
    one = rc.content_key(str(src_dir(tmp_path / "3", {"a.yaml": "ab", "b.yaml": "c"})), ["src", {}])
    other = rc.content_key(str(src_dir(tmp_path / "4", {"a.yaml": "a", "b.yaml": "bc"})), ["src", {}])
    assert one.split("-")[0] != other.split("-")[0]
    # the same directory given with a trailing separator: the same names, the same files
    root = tmp_path / "3" / "src"
    assert rc.content_key(str(root) + "/", ["src", {}]).split("-")[0] == one.split("-")[0]


@pytest.mark.parametrize("files, culprit", [
    ({"a.yaml": CM % "a", "b.yaml.j2": CM % "{{ inventory_hostname }}"}, "b.yaml.j2"),
    ({"kustomization.yaml": "resources: [a.yaml]\n", "a.yaml": CM % "a"}, "kustomization.yaml"),
    ({"a.yaml": "$ANSIBLE_VAULT;1.1;AES256\n6162\n", "b.yaml": CM % "b"}, "a.yaml"),
])
def test_a_src_that_may_depend_on_the_host_or_hold_secrets_has_no_key(tmp_path, files, culprit):
    root = src_dir(tmp_path, files)
    assert rc.content_key(str(root), ["src", {}]) is None
    assert rc.content_key(str(root / culprit), ["src", {}]) is None  # the file alone as src


def test_a_src_with_a_link_out_of_it_has_no_key(tmp_path):
    root = src_dir(tmp_path, {"a.yaml": CM % "a"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.yaml").write_text(CM % "b")
    (root / "linked").symlink_to(elsewhere)
    assert rc.content_key(str(root), ["src", {}]) is None


def settled():
    """A clock ten seconds ahead: every file of the test counts as changed long ago."""
    return time.time_ns() + 10 * 10 ** 9


def unread(monkeypatch):
    def refuse(path, name=None):
        raise AssertionError(f"read {path}")

    monkeypatch.setattr(rc, "_plain_bytes", refuse)


def test_the_bytes_of_a_src_are_read_again_only_when_the_stat_of_a_file_changed(tmp_path, monkeypatch):
    root = src_dir(tmp_path, {"a.yaml": CM % "a", "sub/b.yaml": CM % "b"})
    memo = tmp_path / "kept"
    memo.mkdir()
    head = rc.files_head(str(root), str(memo), clock=settled)
    assert head == rc.files_head(str(root))  # the same digest as without a memo
    assert os.stat(memo / rc.STAT_MEMO).st_mode & 0o777 == 0o600
    with monkeypatch.context() as m:
        unread(m)
        assert rc.files_head(str(root), str(memo), clock=settled) == head  # from the stat: nothing read
        assert rc.content_key(str(root), ["src", {}], memo_dir=str(memo)).split("-")[0] == head
    # the same size and modification time (as a tool that restores them leaves it): the change time tells
    before = os.stat(root / "a.yaml")
    (root / "a.yaml").write_text(CM % "A")
    os.utime(root / "a.yaml", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(root / "a.yaml").st_size == before.st_size
    changed = rc.files_head(str(root), str(memo), clock=settled)
    assert changed != head and changed == rc.files_head(str(root))
    (root / "sub" / "c.yaml").write_text(CM % "c")  # a new file
    added = rc.files_head(str(root), str(memo), clock=settled)
    assert added not in (head, changed) and added == rc.files_head(str(root))
    (root / "sub" / "c.yaml").rename(root / "c.yaml")  # moved: the same inode, another name
    assert rc.files_head(str(root), str(memo), clock=settled) == rc.files_head(str(root)) != added


@pytest.mark.parametrize("relative", [False, True])
def test_a_src_that_is_one_file_is_remembered_by_its_stat_too(tmp_path, monkeypatch, relative):
    root = src_dir(tmp_path, {"a.yaml": CM % "a", "b.yaml": CM % "b"})
    memo = tmp_path / "kept"
    memo.mkdir()
    monkeypatch.chdir(root)
    src = "a.yaml" if relative else str(root / "a.yaml")
    head = rc.files_head(src, str(memo), clock=settled)
    assert head == rc.files_head(src) and (memo / rc.STAT_MEMO).exists()
    with monkeypatch.context() as m:
        unread(m)
        assert rc.files_head(src, str(memo), clock=settled) == head
    (root / "b.yaml").write_text(CM % "B")  # another file of its directory: not the src's
    with monkeypatch.context() as m:
        unread(m)
        assert rc.files_head(src, str(memo), clock=settled) == head
    (root / "a.yaml").write_text(CM % "A")
    assert rc.files_head(src, str(memo), clock=settled) == rc.files_head(src) != head


def test_a_linked_file_is_remembered_by_the_stat_of_its_target(tmp_path, monkeypatch):
    root = src_dir(tmp_path, {"a.yaml": CM % "a", "sub/b.yaml": CM % "b"})
    (root / "link.yaml").symlink_to(root / "sub" / "b.yaml")
    memo = tmp_path / "kept"
    memo.mkdir()
    head = rc.files_head(str(root), str(memo), clock=settled)
    with monkeypatch.context() as m:
        unread(m)
        assert rc.files_head(str(root), str(memo), clock=settled) == head
    (root / "sub" / "b.yaml").write_text(CM % "B")  # the target changed: so did what the link renders
    assert rc.files_head(str(root), str(memo), clock=settled) == rc.files_head(str(root)) != head


def test_the_stat_of_files_just_written_is_not_remembered(tmp_path):
    root = src_dir(tmp_path, {"a.yaml": CM % "a"})
    memo = tmp_path / "kept"
    memo.mkdir()
    assert rc.files_head(str(root), str(memo)) == rc.files_head(str(root))  # the clock of now: a second ago
    assert not (memo / rc.STAT_MEMO).exists()


def test_a_memo_of_another_tree_or_unreadable_is_not_used(tmp_path, monkeypatch):
    one, other = src_dir(tmp_path / "1", {"a.yaml": CM % "a"}), src_dir(tmp_path / "2", {"a.yaml": CM % "b"})
    memo = tmp_path / "kept"
    memo.mkdir()
    rc.files_head(str(one), str(memo), clock=settled)
    assert rc.files_head(str(other), str(memo), clock=settled) == rc.files_head(str(other))
    (memo / rc.STAT_MEMO).write_text("{not json")
    assert rc.files_head(str(one), str(memo), clock=settled) == rc.files_head(str(one))


@pytest.mark.parametrize("files", [
    {"a.yaml": CM % "a", "b.yaml.j2": CM % "{{ inventory_hostname }}"},
    {"kustomization.yaml": "resources: [a.yaml]\n", "a.yaml": CM % "a"},
    {"a.yaml": "$ANSIBLE_VAULT;1.1;AES256\n6162\n", "b.yaml": CM % "b"},
])
def test_a_src_without_a_key_has_none_with_a_memo_and_leaves_none(tmp_path, files):
    root = src_dir(tmp_path, files)
    memo = tmp_path / "kept"
    memo.mkdir()
    for _ in range(2):
        assert rc.content_key(str(root), ["src", {}], memo_dir=str(memo)) is None
    assert not (memo / rc.STAT_MEMO).exists()


def test_the_stat_memo_survives_a_render_kept_beside_it(tmp_path):
    memo = tmp_path / "kept"
    memo.mkdir()
    root = src_dir(tmp_path, {"a.yaml": CM % "a"})
    head = rc.files_head(str(root), str(memo), clock=settled)
    rc.rendered_once(str(memo), head + "-x", lambda: True, lambda: [{"a": 1}])
    assert (memo / rc.STAT_MEMO).exists()


def test_the_checksums_of_a_render_are_kept_beside_it_for_its_key_and_code(tmp_path, monkeypatch):
    directory = tmp_path / "kept"
    directory.mkdir()
    assert rc.kept_checksums(str(directory), "k1-x") == {}
    sums = {"0": ["", "ConfigMap", "ns", "a", 120, "sha256:00"]}
    rc.keep_checksums(str(directory), "k1-x", sums)
    assert rc.kept_checksums(str(directory), "k1-x") == sums and rc.kept_checksums(str(directory), "k2-x") == {}
    (kept,) = directory.glob(rc.CHECKSUMS + "*")
    assert os.stat(kept).st_mode & 0o777 == 0o600
    rc.keep_checksums(str(directory), "k1-y", sums)  # another render of the tree (another path, options): both kept
    assert rc.kept_checksums(str(directory), "k1-x") == rc.kept_checksums(str(directory), "k1-y") == sums
    rc.keep_checksums(str(directory), "k2-x", sums)  # another tree's: those of the first dropped
    assert [p.name for p in directory.glob(rc.CHECKSUMS + "*")] == [rc.CHECKSUMS + "k2-x.json"]
    monkeypatch.setattr(rc, "_CHECKSUM_CODE", ["other code"])  # the engine's checksum code changed: not read
    assert rc.kept_checksums(str(directory), "k2-x") == {}
    monkeypatch.setattr(rc, "_CHECKSUM_CODE", [None])  # the code cannot be read: nothing read, nothing kept
    rc.keep_checksums(str(directory), "k3-x", sums)
    assert rc.kept_checksums(str(directory), "k2-x") == {} and not (directory / (rc.CHECKSUMS + "k3-x.json")).exists()
    kept.write_text("{not json")
    assert rc.kept_checksums(str(directory), "k1-x") == {}


def test_a_render_whose_files_changed_while_read_is_not_kept(tmp_path):
    directory = tmp_path / "kept"
    directory.mkdir()
    made = rc.rendered_once(str(directory), "k1-x", lambda: True, lambda: [{"a": 1}], still=lambda: False)
    assert made == ([{"a": 1}], False)
    assert rc.rendered_once(str(directory), "k1-x", lambda: True, lambda: [{"a": 2}]) == ([{"a": 2}], False)
    assert rc.rendered_once(str(directory), "k1-x", lambda: True, lambda: [{"a": 3}]) == ([{"a": 2}], True)


def test_the_renders_of_a_src_are_kept_in_a_private_directory_of_their_own(tmp_path):
    one = rc.kept_dir(str(tmp_path / "cache"), str(tmp_path / "a"))
    other = rc.kept_dir(str(tmp_path / "cache"), str(tmp_path / "b"))
    assert one != other and os.path.dirname(one) == str(tmp_path / "cache" / "renders")
    assert os.stat(one).st_mode & 0o777 == 0o700


def test_no_render_is_kept_where_the_cache_cannot_be_made(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    assert rc.kept_dir(str(tmp_path / "file"), str(tmp_path / "a")) is None
