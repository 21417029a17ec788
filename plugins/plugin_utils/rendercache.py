# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A source rendered once for every host of one run, when its manifests cannot depend on the host.

``stacksync.k8s.sources`` runs once per host (a cluster), each host in its own forked worker, and every
host renders each source of the same checkout. What a source renders to depends on the host only
through its templates (``*.j2``: host and play variables); plain YAML and JSON files render the same for
every host. A source is rendered once per run (``ansible-playbook``, task) and shared when, under its
directory (symlinks followed as the render follows them), there is:

* no template (a file whose name ends in ``.j2``),
* no kustomization (its output may read what the repository does not hold: remote bases, generators),
* no Ansible vault content (``$ANSIBLE_VAULT``, ``!vault``): decrypted values are never written to disk.

The render is then kept as JSON in the checkout's ``.git`` directory (private to the controller user,
like the checkout), for this run only: the first host renders while the others wait, the others read it.
Every other source is rendered by each host, as before, and a play of one host keeps nothing.
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

PREFIX = "stacksync-render-"
LOCK = "stacksync-render.lock"
TEMPLATE_SUFFIX = ".j2"
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "kustomization")
VAULT_MARKERS = (b"$ANSIBLE_VAULT", b"!vault")


def host_independent(src, root):
    """True if the manifests under ``src`` (in the checkout ``root``) render the same for every host and hold
    nothing decrypted: see the module's docstring."""
    root = os.path.realpath(root)
    seen = set()
    for dirpath, dirs, files in os.walk(src, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink loop, or two links to one directory
            dirs[:] = []
            continue
        if not (real == root or real.startswith(root + os.sep)):
            return False  # outside the checkout: the render refuses it
        seen.add(real)
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # hidden entries: the render skips them (.git)
        for name in files:
            if name.startswith("."):
                continue
            lower = name.lower()
            if lower.endswith(TEMPLATE_SUFFIX) or lower in KUSTOMIZATIONS:
                return False
            try:
                with open(os.path.join(dirpath, name), "rb") as f:
                    data = f.read()
            except (IOError, OSError):
                return False
            if any(marker in data for marker in VAULT_MARKERS):
                return False
    return True


def cache_key(token, commit, src, options):
    """The key of one render: the run (``token``), the commit, the directory and the render's options."""
    text = json.dumps([token, commit, src, options], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@contextlib.contextmanager
def _locked(directory):
    fd = os.open(os.path.join(directory, LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


NOT_SHARED = "not shared"  # what the first host found: each host renders this source itself


def _read(path, token):
    """The manifests kept for this run (``token``), :data:`NOT_SHARED`, or None (nothing for this run)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("token") != token:
        return None
    return data.get("manifests") if data.get("shared") else NOT_SHARED


def _write(directory, path, token, manifests):
    """Keep the render (atomically; None: :data:`NOT_SHARED`), and drop what earlier runs kept (other keys)."""
    for old in glob.glob(os.path.join(directory, PREFIX + "*.json")):
        if old != path:
            with contextlib.suppress(OSError):
                os.remove(old)
    text = json.dumps({"token": token, "shared": manifests is not None, "manifests": manifests}, separators=(",", ":"))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + PREFIX)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def rendered_once(git_dir, token, key, shareable, render):
    """``(manifests, shared)``: this run's render of a source read from ``git_dir`` (``shared`` True), or ``render()``.

    The first host of the run checks ``shareable()`` under a lock: if it holds, it renders and keeps the render
    for the others, which wait for it; if not, it says so and every host renders on its own, in parallel."""
    path = os.path.join(git_dir, PREFIX + key + ".json")
    found = _read(path, token)  # written atomically: whole or absent
    if found is None:
        with _locked(git_dir):
            found = _read(path, token)
            if found is None and shareable():
                manifests = render()
                with contextlib.suppress(IOError, OSError, TypeError, ValueError):  # not JSON: not kept
                    _write(git_dir, path, token, manifests)
                return manifests, False
            if found is None:
                with contextlib.suppress(IOError, OSError):
                    _write(git_dir, path, token, None)
                found = NOT_SHARED
    if found == NOT_SHARED:
        return render(), False
    return found, True
