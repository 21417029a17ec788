# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A source's render kept for every host and every later run, when its manifests cannot depend on the host.

``stacksync.k8s.sources`` runs once per host (a cluster), each host in its own forked worker, and every
host renders each source of the same checkout, run after run. What a source renders to depends on the host only
through its templates (``*.j2``: host and play variables); plain YAML and JSON files render the same for
every host, and the same files render the same in every run. A source's render is kept and read again when,
under its directory (symlinks followed as the render follows them), there is:

* no template (a file whose name ends in ``.j2``),
* no kustomization (its output may read what the repository does not hold: remote bases, generators),
* no Ansible vault content (``$ANSIBLE_VAULT``, ``!vault``): decrypted values are never written to disk.

The render of ``stacksync.k8s.stack``'s ``src`` (a directory or a file of the controller, not a checkout) is kept
the same way, under the key of the names and bytes of every file under it (:func:`content_key`: read every run), in
``<discovery_cache_dir>/renders/`` (private to the controller user), when nothing under it is a template, a
kustomization or vault content, nor a link out of it.

The render is kept as JSON in the checkout's ``.git`` directory (private to the controller user, like the
checkout; ``git fetch`` writes nothing of the repository's there), under a key made of everything it is made of
(:func:`cache_key`): the checkout's tree (git's content address of every file the checkout holds, whatever commit
carries it, so a new commit of the same files finds it), the source's directory, the render's options and the
render's own code. The first host of a run renders while the others wait, then every host of that run and of later
runs reads it until the files change; the renders of other trees are dropped when one is kept. Every other source is
rendered by each host in every run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import tempfile
import time

from ansible.release import __version__ as ANSIBLE_VERSION

PREFIX = "stacksync-render-"
LOCK = "stacksync-render.lock"
TEMPLATE_SUFFIX = ".j2"
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "kustomization")
VAULT_MARKERS = (b"$ANSIBLE_VAULT", b"!vault")


class _Dependent(Exception):
    """The render of the files walked may depend on the host, hold decrypted values, or read files elsewhere."""


def _dirs(src, root):
    """``(directory, its path relative to src with a trailing separator or "", [file names])`` of every directory the
    render of ``src`` may read (under ``root``), the names of its files sorted, in a stable order; raises
    :class:`_Dependent` for a directory out of ``root`` (see the module's docstring)."""
    root = os.path.realpath(root)
    seen = set()
    for dirpath, dirs, files in os.walk(src, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink loop, or two links to one directory
            dirs[:] = []
            continue
        if not (real == root or real.startswith(root + os.sep)):
            raise _Dependent()  # outside the checkout: the render refuses it
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # hidden entries: the render skips them (.git)
        base = os.path.relpath(dirpath, src)  # once per directory: "." for src itself
        yield dirpath, "" if base == os.curdir else base + os.sep, sorted(n for n in files if not n.startswith("."))


def _dir_list(src):
    """:func:`_dirs` of ``src``, a directory or a file."""
    if os.path.isdir(src):
        return _dirs(src, src)
    return [(os.path.dirname(src) or os.curdir, "", [os.path.basename(src)])]


def _flat(listing):
    """``(path relative to src, path, name)`` of every file of a :func:`_dirs` listing, in its order."""
    for dirpath, prefix, names in listing:
        for name in names:
            yield prefix + name, os.path.join(dirpath, name), name


def _files(src, root):
    """``(path relative to src, path, name)`` of every file the render of ``src`` may read (under ``root``), in a
    stable order; raises :class:`_Dependent` for a directory out of ``root`` (see the module's docstring)."""
    return _flat(_dirs(src, root))


def _walk(src, root):
    """``(path relative to src, bytes)`` of every file the render of ``src`` may read (under ``root``), in a stable
    order; raises :class:`_Dependent` (see the module's docstring)."""
    for rel, path, name in _files(src, root):
        yield rel, _plain_bytes(path, name)


def _dependent_name(name):
    """True if a file named ``name`` is a template or a kustomization."""
    name = name.lower()
    return name.endswith(TEMPLATE_SUFFIX) or name in KUSTOMIZATIONS


def _plain_bytes(path, name=None):
    """The bytes of the file ``path`` (named ``name``); raises :class:`_Dependent` for a template, a kustomization or
    vault content."""
    if _dependent_name(name or os.path.basename(path)):
        raise _Dependent()
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (IOError, OSError):
        raise _Dependent() from None
    if any(marker in data for marker in VAULT_MARKERS):
        raise _Dependent()
    return data


def host_independent(src, root):
    """True if the manifests under ``src`` (in the checkout ``root``) render the same for every host and hold
    nothing decrypted: see the module's docstring."""
    try:
        for _file in _walk(src, root):
            pass
    except _Dependent:
        return False
    return True


def _file_list(src):
    """:func:`_files` of ``src``, a directory or a file."""
    return _flat(_dir_list(src))


def _read_head(src):
    """The digest of the names and bytes of every file of ``src`` (None: it is not host-independent)."""
    digest = hashlib.sha256()
    try:
        for rel, path, name in _file_list(src):  # a name cannot hold NUL: each file's name and length end with one
            data = _plain_bytes(path, name)
            digest.update(b"%s\0%d\0" % (rel.encode("utf-8", "surrogateescape"), len(data)))
            digest.update(data)
    except _Dependent:
        return None
    return digest.hexdigest()[:40]


#: a file changed this close to the time its stat was read may change again with the same stat (a timestamp's
#: granularity): the stat of a tree is remembered only when none of its files changed in the last seconds
STAT_SETTLED_NS = 2 * 10 ** 9
STAT_MEMO = "stacksync-files-stat.json"  # not a render: _write keeps it


def _stats(directory, names):
    """The stats of the files ``names`` of ``directory`` (links followed), read relative to the directory."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        return [os.stat(name, dir_fd=fd) for name in names]
    finally:
        os.close(fd)


def _stat_digest(src):
    """``(digest of the names and stats of every file of src, newest change in ns)``, or ``(None, None)`` (a file
    cannot be read, a template, a kustomization or a link out: never remembered). One digest update per directory."""
    digest, newest = hashlib.sha256(), 0
    try:
        for directory, prefix, names in _dir_list(src):
            if any(_dependent_name(name) for name in names):
                return None, None
            stats = _stats(directory, names)
            digest.update(b"".join(b"%s\0%d\0%d\0%d\0%d\0%d\0" % (
                (prefix + name).encode("utf-8", "surrogateescape"), st.st_dev, st.st_ino, st.st_size,
                st.st_mtime_ns, st.st_ctime_ns) for name, st in zip(names, stats)))
            for st in stats:
                newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    except (_Dependent, OSError):
        return None, None
    return digest.hexdigest(), newest


def _remembered_head(memo_dir, stat):
    try:
        with open(os.path.join(memo_dir, STAT_MEMO)) as f:
            memo = json.load(f)
    except (IOError, OSError, ValueError):
        return None
    if isinstance(memo, dict) and memo.get("stat") == stat and isinstance(memo.get("head"), str):
        return memo["head"]
    return None


def _remember_head(memo_dir, stat, head):
    with contextlib.suppress(IOError, OSError):
        _write_json(memo_dir, "." + PREFIX, os.path.join(memo_dir, STAT_MEMO), {"stat": stat, "head": head})


def files_head(src, memo_dir=None, clock=time.time_ns):
    """The digest of the names and bytes of every file of ``src`` (None: not host-independent).

    With ``memo_dir`` (private to this user), the digest is remembered there under the names and stats of the
    files (device, inode, size, modification and change times, as git's index keeps them) and not read again while
    none of them changes: a write changes a file's change time (which no one can set back), a new file or a file
    replaced its inode. The stats are remembered only when no file changed in the last :data:`STAT_SETTLED_NS`
    (``clock()``, in ns): a file written within a timestamp's granularity of its read could keep its stat."""
    if memo_dir is None:
        return _read_head(src)
    now = clock()
    stat, newest = _stat_digest(src)  # before the bytes are read: a change while they are read is a new stat
    if stat is None:
        return _read_head(src)
    head = _remembered_head(memo_dir, stat)
    if head is None:
        head = _read_head(src)
        if head is not None and newest < now - STAT_SETTLED_NS:
            _remember_head(memo_dir, stat, head)
    return head


def content_key(src, options, memo_dir=None):
    """The key of the render of ``src`` (a directory or a file, not a checkout: ``stacksync.k8s.stack``'s ``src``)
    with ``options``, made of the names and bytes of every file under it (:func:`files_head`: with ``memo_dir``, read
    again only when a file's stat changed), the options and :func:`code_fingerprint`; None when it is not
    host-independent (nothing kept: it renders every run)."""
    head = files_head(src, memo_dir)
    if head is None:
        return None
    text = json.dumps([head, os.path.realpath(src), options, code_fingerprint()], sort_keys=True, default=str)
    return "%s-%s" % (head, hashlib.sha256(text.encode("utf-8")).hexdigest()[:32])


def kept_dir(cache_dir, src):
    """The directory (made private to this user) keeping the renders of ``src`` under ``cache_dir``, or None (it cannot
    be made or written to: the render is not kept)."""
    path = os.path.join(os.path.expanduser(cache_dir), "renders",
                        hashlib.sha256(os.path.realpath(src).encode("utf-8")).hexdigest()[:24])
    try:
        os.makedirs(path, 0o700, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK | os.X_OK) else None  # a read-only cache: nothing kept


#: the files whose code makes a render (this directory's, and the manifest validator) and what ansible-core gives it
_CODE = []


def code_fingerprint():
    """A digest of the code that renders: a render kept by other code is not read (computed once per process)."""
    if not _CODE:
        here = os.path.dirname(os.path.abspath(__file__))
        validation = os.path.join(os.path.dirname(here), "module_utils", "engine", "validation.py")
        digest = hashlib.sha256(ANSIBLE_VERSION.encode("utf-8"))
        for path in [*sorted(glob.glob(os.path.join(here, "*.py"))), validation]:
            with contextlib.suppress(IOError, OSError), open(path, "rb") as f:
                digest.update(f.read())
        _CODE.append(digest.hexdigest()[:16])
    return _CODE[0]


def cache_key(tree, src, root, options):
    """The key of a render: the checkout's ``tree`` (it starts the key), the directory ``src`` in the checkout
    ``root``, the render's ``options`` and :func:`code_fingerprint`."""
    text = json.dumps([tree, os.path.relpath(src, root), options, code_fingerprint()], sort_keys=True, default=str)
    return "%s-%s" % (tree, hashlib.sha256(text.encode("utf-8")).hexdigest()[:32])


@contextlib.contextmanager
def _locked(directory):
    fd = os.open(os.path.join(directory, LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


NOT_SHARED = "not shared"  # what the first render found: each host renders this source itself, in every run


def _read(path):
    """The manifests kept at ``path``, :data:`NOT_SHARED`, or None (nothing kept)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("shared"), bool):
        return None
    return data.get("manifests") if data["shared"] else NOT_SHARED


def _write(directory, key, manifests):
    """Keep the render of ``key`` (atomically; None: :data:`NOT_SHARED`), and drop the renders of other trees."""
    tree = key.split("-", 1)[0]
    for old in glob.glob(os.path.join(directory, PREFIX + "*.json")):
        if not os.path.basename(old).startswith(PREFIX + tree + "-"):
            with contextlib.suppress(OSError):
                os.remove(old)
    _write_json(directory, "." + PREFIX, os.path.join(directory, PREFIX + key + ".json"),
                {"shared": manifests is not None, "manifests": manifests})


CHECKSUMS = "stacksync-checksums-"


def _checksums_path(directory, key):
    return os.path.join(directory, CHECKSUMS + key + ".json")


def kept_checksums(directory, key):
    """What the engine's prepare found of each manifest of the render ``key`` kept in ``directory`` (see
    :class:`.prepare.Rendered`), or ``{}``. Kept with the render: the same manifests, by index."""
    try:
        with open(_checksums_path(directory, key)) as f:
            data = json.load(f)
    except (IOError, OSError, ValueError):
        return {}
    if not isinstance(data, dict) or checksum_code() is None or data.get("code") != checksum_code():
        return {}
    return data.get("objects") if isinstance(data.get("objects"), dict) else {}


def keep_checksums(directory, key, checksums):
    """Keep ``checksums`` of the render ``key`` in ``directory`` (atomically), and drop those of other trees' renders
    (as :func:`rendered_once` drops the renders)."""
    tree = key.split("-", 1)[0]
    if checksum_code() is None:
        return
    with contextlib.suppress(IOError, OSError):
        for old in glob.glob(os.path.join(directory, CHECKSUMS + "*.json")):
            if not os.path.basename(old).startswith(CHECKSUMS + tree + "-"):
                os.remove(old)
        _write_json(directory, "." + CHECKSUMS, _checksums_path(directory, key),
                    {"code": checksum_code(), "objects": checksums})


def _write_json(directory, prefix, path, value):
    """Write ``value`` as JSON at ``path`` atomically (a temporary file of this user's in ``directory``, renamed);
    raises as json and the file system do, leaving no temporary file behind."""
    text = json.dumps(value, separators=(",", ":"))  # json's C encoder (json.dump encodes in Python)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.rename(tmp, path)
    except (IOError, OSError):
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


#: the files whose code makes a checksum from a manifest (the canonical form, the stamped keys it leaves out)
_CHECKSUM_CODE = []
_CHECKSUM_FILES = (("engine", "objects.py"), ("engine", "prepare.py"), ("base", "constants.py"))


def checksum_code():
    """A digest of the engine's code that makes an object's checksum (checksums kept by other code are not read), or
    None when it cannot be read (nothing kept)."""
    if not _CHECKSUM_CODE:
        module_utils = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
        digest = hashlib.sha256()
        try:
            for package, name in _CHECKSUM_FILES:
                with open(os.path.join(module_utils, package, name), "rb") as f:
                    digest.update(f.read())
        except (IOError, OSError):
            digest = None
        _CHECKSUM_CODE.append(digest.hexdigest()[:16] if digest else None)
    return _CHECKSUM_CODE[0]


def rendered_once(git_dir, key, shareable, render, still=None):
    """``(manifests, kept)``: the render of ``key`` kept in ``git_dir`` (``kept`` True), or ``render()``.

    With nothing kept, the first host checks ``shareable()`` under a lock: if it holds, it renders and keeps the
    render for the other hosts, which wait for it, and for later runs; if not, it says so and every host renders on
    its own, in parallel, in this run and the next. ``still()``, if given, is asked after the render: False (the files
    changed while they were read) keeps nothing."""
    path = os.path.join(git_dir, PREFIX + key + ".json")
    found = _read(path)  # written atomically: whole or absent
    if found is None:
        with _locked(git_dir):
            found = _read(path)
            if found is None and shareable():
                manifests = render()
                if still is None or still():
                    with contextlib.suppress(IOError, OSError, TypeError, ValueError):  # not JSON: not kept
                        _write(git_dir, key, manifests)
                return manifests, False
            if found is None:
                with contextlib.suppress(IOError, OSError):
                    _write(git_dir, key, None)
                found = NOT_SHARED
    if found == NOT_SHARED:
        return render(), False
    return found, True
