# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render a directory of Kubernetes manifests into a validated, deterministic list of dicts.

This is the logic behind the ``stacksync.k8s.manifests`` lookup, kept free of Ansible
plumbing so it can be unit-tested directly. Ansible-specific work is passed in as hooks:

* ``decrypt(b_data, path) -> bytes`` for ansible-vault data (whole files and ``!vault`` values);
* ``template(text, path) -> str`` for ``*.j2`` files;
* ``kustomize`` -- the command (list of strings) that renders a kustomization directory.

Every problem raises :class:`RenderError` (an ``AnsibleError``) naming the file, the document
index and, where known, the line. Nothing is returned unless the whole tree is valid.

Each kind of source has its module: manifest files (YAML, JSON, vault, templates) :mod:`.render_files`,
kustomization directories :mod:`.render_kustomize`; what they share (:class:`RenderError`) :mod:`.render_common`.
This one selects the files, turns documents into validated manifests and is the entry point, :func:`render`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import os
import re

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import SOURCE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId, group_of
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.validation import is_list_kind, manifest_problem
from ansible_collections.stacksync.k8s.plugins.plugin_utils.kustomize import find_kustomization
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render_common import RenderError, _join
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render_files import (
    ExpansionBudget,
    _file_documents,
    _plain,
)
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render_kustomize import (
    _kustomize_documents,
)

#: File name suffixes read as manifests (a further ``.j2`` makes them templates).
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
TEMPLATE_SUFFIX = ".j2"
DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024
DEFAULT_KUSTOMIZE_TIMEOUT = 300


# --------------------------------------------------------------------------------------------
# Path selection
# --------------------------------------------------------------------------------------------

def glob_to_regex(pattern):
    """Compile a path glob (``*``, ``?``, ``[...]``, ``**``) matched against ``/``-separated paths."""
    pat = pattern.strip()
    while pat.startswith("./"):
        pat = pat[2:]
    pat = pat.strip("/") if pat != "/" else ""
    out = []
    i = 0
    n = len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pat.find("]", i + 2 if pat.startswith("[!", i) or pat.startswith("[]", i) else i + 1)
            if j < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = pat[i + 1:j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[%s]" % body.replace("\\", "\\\\"))
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("^(?:%s)$" % "".join(out))


class PathFilter:
    """include/exclude globs relative to PATH. A pattern matching a directory covers its content."""

    def __init__(self, include=None, exclude=None):
        self.include = [glob_to_regex(p) for p in (include or [])]
        self.exclude = [glob_to_regex(p) for p in (exclude or [])]

    @staticmethod
    def _hits(regexes, rel):
        parts = rel.split("/")
        candidates = ["/".join(parts[:k]) for k in range(len(parts), 0, -1)]
        return any(r.match(c) for r in regexes for c in candidates)

    def excluded(self, rel):
        return bool(self.exclude) and self._hits(self.exclude, rel)

    def selected(self, *rels):
        """True if one of ``rels`` (alternative names of one unit) is included and none excluded."""
        if any(self.excluded(r) for r in rels):
            return False
        return not self.include or any(self._hits(self.include, r) for r in rels)


def manifest_kind(name):
    """``'template'``, ``'json'``, ``'yaml'`` for manifest file names, else ``None``."""
    lower = name.lower()
    template = lower.endswith(TEMPLATE_SUFFIX)
    if template:
        lower = lower[: -len(TEMPLATE_SUFFIX)]
    if not lower.endswith(MANIFEST_SUFFIXES) or lower.startswith("."):
        return None
    if template:
        return "template"
    return "json" if lower.endswith(".json") else "yaml"


def _within(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class _Unit:
    __slots__ = ("kind", "path", "rel")

    def __init__(self, rel, path, kind):
        self.rel = rel
        self.path = path
        self.kind = kind


#: ``kind: Component`` at the top level of a kustomization file
_COMPONENT_KIND = re.compile(rb"""^kind:[ \t]*["']?Component["']?[ \t\r]*(?:#.*)?$""", re.M)


def _is_component(path):
    """True if the kustomization file ``path`` is a kustomize Component: a set of changes that the
    kustomizations listing it in ``components`` apply to their own resources, not built on its own."""
    try:
        with open(path, "rb") as f:
            return _COMPONENT_KIND.search(f.read(65536)) is not None
    except OSError:
        return False  # kustomize reports it


def _symlink_target(entry, rel, kind, root, recursive):
    """``(target, is_dir)`` of a symlinked entry that is read, or None when it is skipped.

    A broken link to a manifest, or a link that would be read and leaves ``root``, is refused.
    """
    if kind is None and not recursive:
        return None
    target = os.path.realpath(entry.path)
    if not os.path.exists(target):
        if kind is not None:
            raise RenderError("broken symlink", rel)
        return None
    is_dir = os.path.isdir(target)
    if (kind is None and not is_dir) or (is_dir and not recursive):
        return None
    if not _within(target, root):
        raise RenderError("symlink points outside the checkout: refused", rel)
    return target, is_dir


def collect(base, root, path_filter, recursive=True):
    """List the units (files and kustomize directories) under ``base``, sorted by relative path.

    ``base`` and ``root`` are real (symlink-free) absolute paths. Symlinks whose target is
    outside ``root`` are refused if they would be read.
    """
    units = []
    if os.path.isfile(base):
        name = os.path.basename(base)
        kind = manifest_kind(name)
        if kind is None:
            raise RenderError("not a manifest file (expected *.yaml, *.yml, *.json or a *.j2 of those)", name)
        return [_Unit(name, base, kind)]
    if not os.path.isdir(base):
        raise RenderError("%s is not a directory or a manifest file" % base)

    visited = set()

    def walk(real_dir, prefix):
        if real_dir in visited:  # a symlink loop or two links to one directory
            return
        visited.add(real_dir)
        try:
            entries = sorted(os.scandir(real_dir), key=lambda e: e.name)
        except OSError as exc:
            raise RenderError("cannot list directory: %s" % exc.strerror, prefix or ".") from exc
        kfile = find_kustomization({e.name for e in entries})
        if kfile is not None:
            if prefix and _is_component(os.path.join(real_dir, kfile)):
                return  # rendered by the kustomizations that list it in their components
            if path_filter.selected(prefix or ".", _join(prefix, kfile)):
                units.append(_Unit(prefix or ".", real_dir, "kustomize"))
            return
        for entry in entries:
            rel = _join(prefix, entry.name)
            if entry.name.startswith(".") or path_filter.excluded(rel):
                continue
            kind = manifest_kind(entry.name)
            if entry.is_symlink():
                found = _symlink_target(entry, rel, kind, root, recursive)
                if found is None:
                    continue
                target, is_dir = found
            else:
                target, is_dir = entry.path, entry.is_dir(follow_symlinks=False)
            if is_dir:
                if recursive:
                    walk(target, rel)
            elif kind is not None and path_filter.selected(rel):
                units.append(_Unit(rel, target, kind))

    walk(base, "")
    units.sort(key=lambda u: u.rel)
    return units


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

def manifest_identity(doc):
    """The ObjectId of a manifest :func:`manifest_problem` accepted (namespace as written)."""
    meta = doc["metadata"]
    return ObjectId(group_of(doc["apiVersion"]), doc["kind"], meta.get("namespace") or "", meta["name"])


def _items(doc):
    """``[(item index, object)]`` of a document: the items of a List, else the document itself."""
    if isinstance(doc, dict) and is_list_kind(doc):
        return [(i, item) for i, item in enumerate(doc["items"]) if item is not None]
    return [(None, doc)]


def _with_source(doc, source):
    """A copy of ``doc`` annotated with the file and document it came from (``path#index``)."""
    meta = dict(doc["metadata"])
    annotations = dict(meta.get("annotations") or {})
    annotations[SOURCE_ANNOTATION] = source
    meta["annotations"] = annotations
    out = dict(doc)
    out["metadata"] = meta
    return out


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------

class _Settings:
    """What every unit of one render is read with (see :func:`render`)."""

    __slots__ = (
        "budget",
        "decrypt",
        "kustomize",
        "kustomize_identity",
        "kustomize_remote",
        "kustomize_timeout",
        "max_file_size",
        "root",
        "template",
    )

    def __init__(self, root, **kwargs):
        self.root = root
        for name in self.__slots__:
            if name != "root":
                setattr(self, name, kwargs[name])


def render(path, root=None, include=None, exclude=None, recursive=True, max_file_size=DEFAULT_MAX_FILE_SIZE,
           source_annotation=True, decrypt=None, template=None, kustomize=None,
           kustomize_timeout=DEFAULT_KUSTOMIZE_TIMEOUT, seen=None, origin=None, kustomize_remote=False,
           kustomize_identity=False):
    """Render every manifest under ``path`` and return them as a list of plain dicts.

    :param path: directory (or single manifest file) to render.
    :param root: the checkout; nothing outside it is read (default: ``path``).
    :param include: globs relative to ``path``; if given, only matching files are read.
    :param exclude: globs relative to ``path``; matching files and directories are skipped.
    :param recursive: descend into subdirectories.
    :param max_file_size: refuse files larger than this many bytes (0: no limit).
    :param source_annotation: add ``stacksync.io/source: "<file>#<document>"`` to each manifest.
    :param decrypt: ``decrypt(b_vaulttext) -> bytes``; ``None``: vault data is an error.
    :param template: ``template(text, abs_path) -> str``; ``None``: ``*.j2`` files are an error.
    :param kustomize: command rendering a kustomization directory (the directory is appended);
        ``None``: ``kustomize build`` if available, else ``kubectl kustomize`` (root-only loading).
    :param kustomize_remote: let kustomizations refer to remote bases, resources and files (kustomize
        fetches them from the network); ``False``: refused before kustomize runs (see :mod:`kustomize`).
    :param kustomize_identity: kustomize (and the git it runs for remote bases) runs with the controller's
        environment: its ``HOME``, ssh agent, git configuration and credentials (a trusted source); ``False``:
        with none of them (:func:`.kustomize.kustomize_environment`).
    :param origin: prefix for the sources named in duplicate errors (e.g. the rendered path + ``/``);
        with ``root`` the sources are already named by their path in the repository.
    :param seen: dict ``ObjectId -> source`` shared between calls to detect duplicates across trees.
    :raises RenderError: on the first invalid file, document or duplicate. Its path is relative to
        ``root`` when ``root`` is given (the file's path in the repository), else to ``path``.
    """
    if not isinstance(path, str) or not path:
        raise RenderError("the path to render must be a non-empty string")
    base = os.path.realpath(os.path.expanduser(path))
    root_real = os.path.realpath(os.path.expanduser(root)) if root else base
    shown = shown_path(path, root)
    if not os.path.exists(base):
        raise RenderError("%s does not exist" % shown)
    if not _within(base, root_real):
        raise RenderError("%s resolves outside the checkout: refused" % shown)
    if not os.path.isdir(base) and not os.path.isfile(base):
        raise RenderError("%s is not a directory or a manifest file" % shown)
    if root and not os.path.isdir(root_real):
        raise RenderError("root %s is not a directory" % root)
    if isinstance(include, str):
        include = [include]
    if isinstance(exclude, str):
        exclude = [exclude]

    # with a root, files are named by their path in the repository (in errors and in the source annotation)
    prefix = _relative_dir(base, root_real) if root else ""
    settings = _Settings(root_real, max_file_size=max_file_size, decrypt=decrypt, template=template, kustomize=kustomize,
                         kustomize_timeout=kustomize_timeout, kustomize_remote=kustomize_remote,
                         kustomize_identity=kustomize_identity,
                         budget=ExpansionBudget())
    try:
        return _render_units(collect(base, root_real, PathFilter(include, exclude), recursive=recursive),
                             settings, source_annotation, {} if seen is None else seen, origin, prefix)
    except RenderError as exc:
        exc = exc.under(prefix)
        if root:  # named in the repository, never by the controller's checkout directory
            exc = exc.relative_to(root_real).relative_to(os.path.abspath(os.path.expanduser(root)))
        raise exc from None


def shown_path(path, root=None):
    """``path`` as messages name it: relative to ``root`` when given (its path in the repository,
    ``..`` components resolved lexically), else as given."""
    if not root:
        return path
    rel = os.path.relpath(os.path.abspath(os.path.expanduser(path)), os.path.abspath(os.path.expanduser(root)))
    return rel.replace(os.sep, "/")


def _relative_dir(base, root):
    """The directory of ``base`` (itself, or a file's directory) relative to ``root``; ``""`` for the root."""
    directory = base if os.path.isdir(base) else os.path.dirname(base)
    rel = os.path.relpath(directory, root)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _render_units(units, settings, source_annotation, seen, origin, prefix=""):
    manifests = []
    for unit in units:
        documents = _kustomize_documents(unit, settings) if unit.kind == "kustomize" else _file_documents(unit, settings)
        label = (prefix or unit.rel) if unit.rel == "." else _join(prefix, unit.rel)
        shown = unit.rel + "/" if unit.kind == "kustomize" else unit.rel
        for index, line, doc, plain in documents:
            if doc is None:
                continue
            if not plain:
                where = functools.partial(RenderError, path=shown, doc=index, line=line)
                try:
                    doc = _plain(doc, where)
                except RecursionError:
                    raise where("the document is nested too deeply (more levels than Python's recursion limit)") from None
            source = "%s#%d" % (label, index)
            for item_index, item in _items(doc):
                item_err = functools.partial(RenderError, path=shown, doc=index, line=line, item=item_index)
                problem = manifest_problem(item)
                if problem:
                    raise item_err(problem)
                oid = manifest_identity(item)
                previous = seen.get(oid)
                if previous is not None:
                    raise item_err("%s is defined twice (first in %s)" % (oid, previous))
                seen[oid] = (origin or "") + source + ("" if item_index is None else " item %s" % item_index)
                manifests.append(_with_source(item, source) if source_annotation else item)
    return manifests
