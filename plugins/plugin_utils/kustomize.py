# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a kustomization may reach, checked before kustomize runs.

kustomize confines the plain files a kustomization loads to its own directory (its default load
restrictor, ``LoadRestrictionsRootOnly``), but the directories it lists (``resources``, ``bases``,
``components``) may be anywhere, and it fetches from the network whatever is written as a URL: git
repositories (``github.com/org/repo//path?ref=v1``, ``https://…``, ``git@…``, ``ssh://…``), files over
HTTP (``resources``, generator ``files`` / ``envs``, ``patches``, ``openapi`` …) and Helm charts.

:func:`check_tree` reads the kustomization files of a tree (the kustomization and every local one it
refers to, recursively) and refuses, naming the kustomization file and the reference:

* every reference to something outside the checkout (``../../..``, an absolute path, a symlink out);
* unless remote references are allowed, every remote one (the default is that of Flux's
  ``--no-remote-bases``: a repository's kustomizations build from the repository alone).

Pure file reading, no kustomize; errors are :class:`KustomizationRefused`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import selectors
import subprocess
import time

import yaml

#: A directory holding one of these is a kustomization.
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

#: How kustomize recognises a remote reference (sigs.k8s.io/kustomize api/internal/git/repospec.go, and
#: the loader's HTTP files): a URL scheme, go-getter's ``git::``, ``gh:``, scp-like ``user@host:``,
#: github.com without a scheme, Azure DevOps' ``_git/``.
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git::|gh:|[\w.-]+@[\w.-]+:|github\.com[:/])|_git/", re.IGNORECASE)

#: Fields whose entries are kustomizations (directories, built in turn) or files: ``field -> kind``
_LIST_FIELDS = {
    "resources": "base", "bases": "base", "components": "base",
    "generators": "base", "transformers": "base", "validators": "base",
    "crds": "file", "configurations": "file", "patchesStrategicMerge": "file",
}
#: Fields whose entries are mappings with a ``path`` (a file)
_PATH_FIELDS = ("patches", "patchesJson6902", "replacements")
_GENERATORS = ("configMapGenerator", "secretGenerator")


class KustomizationRefused(ValueError):
    """A kustomization refers to something it may not: ``args[0]`` is the message."""


def is_remote(reference):
    """True if kustomize would fetch ``reference`` from the network (a git repository or an HTTP file)."""
    return bool(_REMOTE.search(reference.strip()))


def find_kustomization(names):
    """The kustomization file among a directory's ``names`` (kustomize's order), else ``None``."""
    for candidate in KUSTOMIZATION_FILES:
        if candidate in names:
            return candidate
    return None


def _inline(entry):
    """True for an entry that is YAML written in place (an inline patch or generator config), not a path."""
    return "\n" in entry or entry.lstrip()[:1] in ("{", "[")


def _generator_files(generator):
    """The files a ``configMapGenerator`` / ``secretGenerator`` entry reads: ``files`` (``key=path`` or
    ``path``), ``envs``, the deprecated ``env``."""
    files = []
    for entry in generator.get("files") or []:
        if isinstance(entry, str):
            files.append(entry.split("=", 1)[1] if "=" in entry else entry)
    files.extend(e for e in (generator.get("envs") or []) if isinstance(e, str))
    if isinstance(generator.get("env"), str):
        files.append(generator["env"])
    return files


def references(data):
    """``(field, reference, kind)`` for every path or URL a kustomization's ``data`` names; ``kind`` is
    ``"base"`` (a kustomization directory or a file), ``"file"`` or ``"remote"`` (always the network)."""
    refs = []
    for field, kind in _LIST_FIELDS.items():
        for entry in _entries(data.get(field)):
            if isinstance(entry, str) and entry.strip() and not _inline(entry):
                refs.append((field, entry.strip(), kind))
    for field in _PATH_FIELDS:
        for entry in _entries(data.get(field)):
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                refs.append((field, entry["path"], "file"))
    openapi = data.get("openapi")
    if isinstance(openapi, dict) and isinstance(openapi.get("path"), str):
        refs.append(("openapi", openapi["path"], "file"))
    for field in _GENERATORS:
        for entry in _entries(data.get(field)):
            if isinstance(entry, dict):
                refs.extend((field, path, "file") for path in _generator_files(entry))
    for entry in _entries(data.get("helmCharts")):
        if isinstance(entry, dict) and entry.get("repo"):
            refs.append(("helmCharts", str(entry["repo"]), "remote"))
    for entry in _entries(data.get("helmChartInflationGenerator")):
        if isinstance(entry, dict) and entry.get("chartRepoUrl"):
            refs.append(("helmChartInflationGenerator", str(entry["chartRepoUrl"]), "remote"))
    helm_globals = data.get("helmGlobals")
    if isinstance(helm_globals, dict) and isinstance(helm_globals.get("chartHome"), str):
        refs.append(("helmGlobals.chartHome", helm_globals["chartHome"], "file"))
    return refs


def _entries(value):
    return value if isinstance(value, list) else []


def _within(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _load(path):
    """A kustomization file's mapping; ``None`` when kustomize itself will report what is wrong with it."""
    try:
        with open(path, "rb") as f:
            data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # a safe loader
    except (OSError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def check_tree(kdir, root, allow_remote=False, visited=None):
    """Refuse the kustomization in ``kdir`` (recursively: the local kustomizations it refers to) if it
    names something outside ``root`` (both real absolute paths) or, unless ``allow_remote``, something
    remote. Raises :class:`KustomizationRefused`; references to nothing are left to kustomize."""
    visited = set() if visited is None else visited
    if kdir in visited:
        return
    visited.add(kdir)
    try:
        kfile = find_kustomization(set(os.listdir(kdir)))
    except OSError:
        return
    if kfile is None:
        return
    data = _load(os.path.join(kdir, kfile))
    if data is None:
        return
    shown = os.path.relpath(os.path.join(kdir, kfile), root).replace(os.sep, "/")
    for field, ref, kind in references(data):
        if kind == "remote" or is_remote(ref):
            if allow_remote:
                continue
            raise KustomizationRefused(
                "%s: %s %r is a remote reference (kustomize would fetch it from the network): refused; a "
                "source's kustomizations build from its repository alone unless it sets kustomize_remote: true"
                % (shown, field, ref))
        target = os.path.join(kdir, ref)
        if not os.path.lexists(target):
            continue  # missing: kustomize says so
        real = os.path.realpath(target)
        if not _within(real, root):
            raise KustomizationRefused("%s: %s %r resolves outside the checkout: refused" % (shown, field, ref))
        if kind == "base" and os.path.isdir(real):
            check_tree(real, root, allow_remote, visited)


class OutputTooLarge(Exception):
    """kustomize wrote more than the limit to its standard output (it was stopped)."""


def run_bounded(argv, cwd, timeout, limit):
    """``(returncode, stdout, stderr)`` of ``argv`` run in ``cwd`` with no input, stopped (killed) after
    ``timeout`` seconds (``subprocess.TimeoutExpired``) or once it wrote more than ``limit`` bytes to its
    standard output (:class:`OutputTooLarge`; ``limit`` 0 or ``None``: no limit). Its standard error is kept
    up to 64 KiB: enough for kustomize's message."""
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    chunks = {proc.stdout: [], proc.stderr: []}
    sizes = {proc.stdout: 0, proc.stderr: 0}
    try:
        with selectors.DefaultSelector() as selector:
            for stream in chunks:
                selector.register(stream, selectors.EVENT_READ)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _events in selector.select(left):
                    data = os.read(key.fd, 65536)
                    if not data:
                        selector.unregister(key.fileobj)
                        continue
                    sizes[key.fileobj] += len(data)
                    if key.fileobj is proc.stdout and limit and sizes[key.fileobj] > limit:
                        raise OutputTooLarge()
                    if key.fileobj is proc.stdout or sizes[key.fileobj] <= 65536:
                        chunks[key.fileobj].append(data)
        returncode = proc.wait(max(deadline - time.monotonic(), 0.1))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    return returncode, b"".join(chunks[proc.stdout]), b"".join(chunks[proc.stderr])
