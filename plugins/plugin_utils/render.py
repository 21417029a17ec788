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
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import json
import os
import re
import shutil
import stat
import subprocess

import yaml
from ansible.errors import AnsibleError
from ansible_collections.stacksync.k8s.plugins.module_utils.constants import SOURCE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import ObjectId, group_of
from ansible_collections.stacksync.k8s.plugins.module_utils.validation import is_list_kind, manifest_problem
from ansible_collections.stacksync.k8s.plugins.plugin_utils.kubeyaml import (
    ExpansionError,
    KubectlLoader,
    expansion,
    is_json_stream,
    iter_json_values,
    split_documents,
)
from ansible_collections.stacksync.k8s.plugins.plugin_utils.kustomize import (
    KustomizationRefused,
    OutputTooLarge,
    check_tree,
    find_kustomization,
    run_bounded,
)
from ansible_collections.stacksync.k8s.plugins.plugin_utils.sandbox import TemplateFailure

#: File name suffixes read as manifests (a further ``.j2`` makes them templates).
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
TEMPLATE_SUFFIX = ".j2"
DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024
DEFAULT_KUSTOMIZE_TIMEOUT = 300
VAULT_HEADER = b"$ANSIBLE_VAULT;"


class RenderError(AnsibleError):
    """A manifest tree that must not be applied. ``path`` is relative to the rendered PATH."""

    def __init__(self, problem, path=None, doc=None, line=None, item=None):
        self.problem = problem
        self.path = path
        self.doc = doc
        self.line = line
        self.item = item
        super(RenderError, self).__init__(self._format())

    def _format(self):
        if self.path is None:
            return self.problem
        where = []
        if self.doc is not None:
            where.append("document %d" % self.doc)
        if self.item is not None:
            where.append("item %d" % self.item)
        if self.line is not None:
            where.append("line %d" % self.line)
        return "%s%s: %s" % (self.path, " (%s)" % ", ".join(where) if where else "", self.problem)

    def under(self, prefix):
        """The same error with its path prefixed by ``prefix`` (a directory relative to the render root)."""
        if not prefix or self.path is None:
            return self
        path = prefix + "/" if self.path in (".", "./") else _join(prefix, self.path)
        return RenderError(self.problem, path=path, doc=self.doc, line=self.line, item=self.item)

    def relative_to(self, root):
        """The same error with every mention of the directory ``root`` in its problem made relative to it
        (kustomize's and templates' own messages name absolute paths): see :func:`relative_text`."""
        problem = relative_text(self.problem, root)
        if problem == self.problem:
            return self
        return RenderError(problem, path=self.path, doc=self.doc, line=self.line, item=self.item)


def relative_text(text, root):
    """``text`` with the absolute directory ``root`` taken out of the paths it names: ``<root>/a/b.yaml``
    becomes ``a/b.yaml`` and ``<root>`` alone ``.``. Paths that merely start with the same characters
    (``<root>-other``) are left alone; so is everything when ``root`` is the file system's root."""
    root = root.rstrip("/\\")
    if not root or not isinstance(text, str):
        return text
    pattern = re.compile(r"(?<![\w./\\-])" + re.escape(root) + r"(?:[/\\]|(?![\w.-]))")
    return pattern.sub(lambda m: "" if m.group(0) != root else ".", text)


# --------------------------------------------------------------------------------------------
# YAML
# --------------------------------------------------------------------------------------------


class ManifestLoader(KubectlLoader):  # pylint: disable=too-many-ancestors
    """Loads one YAML document as kubectl reads it (see :mod:`kubeyaml`), plus ``!vault`` values
    decrypted with ``self.decrypt``. Every value is JSON-serialisable."""


def _at(mark, offset):
    return "line %d, column %d" % (mark.line + 1 + offset, mark.column + 1)


def yaml_error(exc, offset=0):
    """``(line, problem)`` of a YAML error: the line where it fails (PyYAML's problem mark, else its context
    mark; ``offset`` lines before the text parsed) and a message naming both positions, where it fails and,
    when elsewhere, where the construct it was reading starts (``found unexpected end of stream at line 9,
    column 1, while scanning a quoted scalar that starts at line 7, column 6``)."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return None, "invalid YAML: %s" % exc
    problem_mark, context_mark = exc.problem_mark, exc.context_mark
    mark = problem_mark or context_mark
    parts = []
    if exc.problem:
        parts.append(exc.problem + (" at %s" % _at(problem_mark, offset) if problem_mark is not None else ""))
    if exc.context:
        starts = context_mark is not None and (problem_mark is None or (context_mark.line, context_mark.column)
                                               != (problem_mark.line, problem_mark.column))
        parts.append(exc.context + (" that starts at %s" % _at(context_mark, offset) if starts else ""))
    if not parts:
        parts.append("at %s" % _at(mark, offset) if mark is not None else "")
    line = mark.line + 1 + offset if mark is not None else None
    return line, "invalid YAML: %s" % ", ".join(p for p in parts if p)


#: Most bytes (about, as JSON) one document may expand to through YAML anchors and aliases: an alias of a
#: 100 kB string counts 100 kB each time it is used. A Kubernetes object is at most ~1.5 MiB (etcd).
MAX_DOCUMENT_SIZE = 32 * 1024 * 1024
#: Most bytes the documents with anchors of one render (one call of :func:`render`) may expand to in all.
MAX_EXPANDED_SIZE = 128 * 1024 * 1024


class ExpansionBudget:
    """What the documents with anchors of one render may still expand to, in bytes (:data:`MAX_EXPANDED_SIZE`)."""

    def __init__(self, total=None):
        self.total = MAX_EXPANDED_SIZE if total is None else total
        self.left = self.total


def _check_expansion(node, rel, index, line, offset, budget):
    """Refuse a document whose aliases expand it past :data:`MAX_DOCUMENT_VALUES` values, :data:`MAX_DOCUMENT_SIZE`
    bytes, or the bytes left in the render's ``budget``; measured on the nodes (see :func:`kubeyaml.expansion`)."""
    if budget is None:
        budget = ExpansionBudget()
    limit = min(MAX_DOCUMENT_SIZE, budget.left)
    try:
        size = expansion(node, MAX_DOCUMENT_VALUES, limit)[1]
    except ExpansionError as exc:
        raise RenderError(_expansion_problem(exc, limit, budget, offset), rel, doc=index, line=line) from None
    budget.left -= size


def _expansion_problem(exc, limit, budget, offset):
    if exc.limit == "recursive":
        return ("an alias on line %d names a node that contains it: a recursive structure, which kubectl cannot "
                "convert to JSON" % (exc.node.start_mark.line + 1 + offset))
    if exc.limit == "values":
        return ("the document expands to more than %d values through YAML anchors and aliases (an alias bomb?): "
                "refusing it, over the limit" % MAX_DOCUMENT_VALUES)
    repeated = ""
    if exc.repeated is not None:
        repeated = "; its aliases repeat a %d-byte part from line %d" % (
            exc.repeated[0], exc.repeated[1].start_mark.line + 1 + offset)
    if limit < MAX_DOCUMENT_SIZE:
        return ("the documents of this tree expand to more than %d bytes in all through YAML anchors and aliases "
                "(an alias bomb?%s): refusing it, over the limit of one render" % (budget.total, repeated))
    return ("the document expands to more than %d bytes through YAML anchors and aliases (an alias bomb?%s): "
            "refusing it, over the limit of one document" % (MAX_DOCUMENT_SIZE, repeated))


_END_MARKER = re.compile(r"^\.\.\.(?:\s|$)", re.MULTILINE)


def _load_chunk(chunk, rel, index, first_line, decrypt, budget=None):
    """``(line, data, plain)`` of one YAML document (a chunk of :func:`kubeyaml.split_documents`);
    ``plain``: the data is known to be plain JSON values within :data:`MAX_DOCUMENT_VALUES` (see
    :func:`kubeyaml.construct_tree`), so :func:`_plain` has nothing to do."""
    loader = ManifestLoader(chunk)
    loader.decrypt = decrypt
    loader.max_values = MAX_DOCUMENT_VALUES
    offset = first_line - 1
    loader.line_offset = offset
    line = first_line
    try:
        node = loader.get_single_node()
        if node is None:
            return line, None, True
        line = node.start_mark.line + 1 + offset
        if not loader.is_tree:  # anchors: what its aliases expand to is measured before anything is built
            _check_expansion(node, rel, index, line, offset, budget)
        data = loader.construct_document(node)
        return line, data, loader.built_as_tree
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (no mark, a position)
        raise RenderError("invalid YAML: unacceptable character #x%04x: %s" % (exc.character, exc.reason), rel,
                          doc=index, line=chunk.count("\n", 0, exc.position) + first_line) from None
    except yaml.YAMLError as exc:
        error_line, problem = yaml_error(exc, offset)
        if getattr(exc, "problem", None) == "did not find expected <document start>" and _END_MARKER.search(chunk):
            problem += (" (content after a '...' document end marker: kubectl would silently ignore it; "
                        "start a new document with a --- line)")
        raise RenderError(problem, rel, doc=index, line=error_line or line) from None
    except RecursionError:
        raise RenderError("the document is nested too deeply (more levels than the YAML parser's recursion limit)",
                          rel, doc=index, line=line) from None
    except RenderError:
        raise
    except AnsibleError as exc:  # vault errors raised by the decrypt hook
        raise RenderError("cannot decrypt a !vault value: %s" % _msg(exc), rel, doc=index, line=line) from exc
    finally:
        loader.dispose()


def iter_yaml_documents(text, rel, decrypt=None, budget=None):
    """Yield ``(index, line, document, plain)`` for each document of a manifest file's text, as kubectl
    reads it (``plain``: see :func:`_load_chunk`; a document that is not must go through :func:`_plain`).

    A text starting with ``{`` is a stream of JSON values; anything else YAML documents separated by
    lines starting with ``---`` (empty documents are yielded too, as ``None``). ``budget``: the
    :class:`ExpansionBudget` of the render the text belongs to (default: one for this text alone).
    """
    if is_json_stream(text):
        index = 0
        try:
            for line, value in iter_json_values(text):
                yield index, line, value, False
                index += 1
        except ValueError as exc:
            line, problem = exc.args
            raise RenderError(problem, rel, doc=index, line=line) from None
        return
    index = 0
    chunks = split_documents(text)
    while True:
        try:
            index, first_line, chunk = next(chunks)
        except StopIteration:
            return
        except ValueError as exc:
            line, problem = exc.args
            raise RenderError("invalid YAML: %s" % problem, rel, doc=index + 1, line=line) from None
        line, data, plain = _load_chunk(chunk, rel, index, first_line, decrypt, budget)
        yield index, line, data, plain


def _msg(exc):
    return getattr(exc, "message", None) or str(exc)


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


def _join(prefix, name):
    return prefix + "/" + name if prefix else name


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
# Reading files
# --------------------------------------------------------------------------------------------

def _read_bytes(unit, max_file_size):
    try:
        st = os.stat(unit.path)
    except OSError as exc:
        raise RenderError("cannot read file: %s" % exc.strerror, unit.rel) from exc
    if not stat.S_ISREG(st.st_mode):
        raise RenderError("not a regular file", unit.rel)
    if max_file_size and st.st_size > max_file_size:
        raise RenderError("file is %d bytes, over the %d byte limit (max_file_size)" % (st.st_size, max_file_size),
                          unit.rel)
    try:
        with open(unit.path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise RenderError("cannot read file: %s" % exc.strerror, unit.rel) from exc


def _decode(b_data, rel):
    try:
        text = b_data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = b_data.count(b"\n", 0, exc.start) + 1
        raise RenderError("not UTF-8 text (byte 0x%02x at offset %d)" % (b_data[exc.start], exc.start), rel,
                          line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def is_vault_data(b_data):
    return b_data.lstrip().startswith(VAULT_HEADER)


def _file_documents(unit, settings):
    b_data = _read_bytes(unit, settings.max_file_size)
    decrypt = settings.decrypt
    if is_vault_data(b_data):
        if decrypt is None:
            raise RenderError("the file is vault-encrypted but no vault secrets are available", unit.rel)
        try:
            b_data = decrypt(b_data)
        except AnsibleError as exc:
            raise RenderError("cannot decrypt the vault-encrypted file: %s" % _msg(exc), unit.rel) from exc
    text = _decode(b_data, unit.rel)
    if unit.kind == "template":
        text = _rendered(unit, text, settings)
    return iter_yaml_documents(text, unit.rel, decrypt=decrypt, budget=settings.budget)


def _rendered(unit, text, settings):
    """The text a template renders to (its output refused past ``max_file_size``)."""
    if settings.template is None:
        raise RenderError("is a template but no templating engine is available", unit.rel)
    try:
        rendered = settings.template(text, unit.path)
    except RenderError:
        raise
    except TemplateFailure as exc:  # the sandbox: what it refused or what failed, and where
        raise RenderError(exc.problem, unit.rel, line=exc.line) from None
    except Exception as exc:  # pylint: disable=broad-except  # any templating failure
        raise RenderError("template error: %s" % _msg(exc), unit.rel) from exc
    if isinstance(rendered, (dict, list)):  # a template that is a single expression
        rendered = json.dumps(rendered)
    # a plain str: ansible-core 2.16's unsafe text is a subclass whose str() is itself, which libyaml refuses
    rendered = "".join([str(rendered)])
    if settings.max_file_size and len(rendered) > settings.max_file_size:
        raise RenderError("the template's output is over the %d byte limit (max_file_size)" % settings.max_file_size,
                          unit.rel)
    return rendered


# --------------------------------------------------------------------------------------------
# kustomize
# --------------------------------------------------------------------------------------------

#: kustomize's default load restrictor, written out so that no configuration can relax it: a
#: kustomization loads files from its own directory only.
ROOT_ONLY = "--load-restrictor=LoadRestrictionsRootOnly"


def default_kustomize_command():
    """``kustomize build`` if a kustomize binary is on PATH, else ``kubectl kustomize``; with the root-only
    load restrictor, and no Helm, plugins or network for KRM functions (kustomize's defaults)."""
    binary = shutil.which("kustomize")
    if binary:
        return [binary, "build", ROOT_ONLY]
    kubectl = shutil.which("kubectl")
    if kubectl:
        return [kubectl, "kustomize", ROOT_ONLY]
    return None


#: kustomize flags that let a kustomization reach outside its repository: files anywhere, Helm charts,
#: exec and container KRM functions (and their network).
RELAXING_FLAGS = ("loadrestrictionsnone", "--enable-helm", "--helm-command", "--enable-exec", "--enable-alpha-plugins",
                  "--network", "--mount")


def relaxing_flags(command):
    """The arguments of a kustomize ``command`` that relax its confinement (see :data:`RELAXING_FLAGS`)."""
    return [arg for arg in command or [] if any(flag in str(arg).lower() for flag in RELAXING_FLAGS)]


#: klog's line header (``E1203 14:20:16.401638   26798 run.go:72] ``), as kubectl prints its errors.
_KLOG_HEADER = re.compile(r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [\w.-]+:\d+\] ")
_KLOG_ERR = re.compile(r'\berr="((?:[^"\\]|\\.)*)"')


def kustomize_message(stderr, root=None):
    """What kustomize (or ``kubectl kustomize``) said went wrong, without klog's headers and quoting, its
    warnings (``# Warning: 'bases' is deprecated ...``) or the checkout's directory (``root``): paths read
    relative to the repository."""
    messages = []
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith("# Warning:"):
            continue
        header = _KLOG_HEADER.match(line)
        if header:
            line = line[header.end():]
            err = _KLOG_ERR.search(line)
            if err:
                line = err.group(1).replace('\\"', '"').replace("\\\\", "\\")
        if line.startswith("Error: "):
            line = line[len("Error: "):]
        if root:
            line = relative_text(line, root)
        if line and line not in messages:
            messages.append(line)
    return "; ".join(messages) or "no message"


#: kustomize's output is refused past this many times ``max_file_size`` (a kustomization renders many files).
KUSTOMIZE_OUTPUT_FACTOR = 8


def _kustomize_documents(unit, settings):
    rel = unit.rel + "/"
    try:
        check_tree(unit.path, settings.root, allow_remote=settings.kustomize_remote)
    except KustomizationRefused as exc:
        raise RenderError(str(exc), rel) from None
    command = settings.kustomize
    if command is None:
        command = default_kustomize_command()
    if not command:
        raise RenderError("is a kustomization but neither kustomize nor kubectl is on PATH", rel)
    argv = [*command, unit.path]
    limit = settings.max_file_size * KUSTOMIZE_OUTPUT_FACTOR
    try:
        returncode, stdout, stderr = run_bounded(argv, unit.path, settings.kustomize_timeout, limit)
    except subprocess.TimeoutExpired:
        raise RenderError("kustomize did not finish within %s seconds (%s)" % (settings.kustomize_timeout,
                                                                               " ".join(argv)), rel) from None
    except OutputTooLarge:
        raise RenderError("kustomize's output is over the %d byte limit (%d times max_file_size): stopped it"
                          % (limit, KUSTOMIZE_OUTPUT_FACTOR), rel) from None
    except OSError as exc:
        raise RenderError("cannot run %s: %s" % (argv[0], exc.strerror), rel) from exc
    if returncode != 0:
        raise RenderError("kustomize failed (%s exited with %d): %s" % (
            " ".join([os.path.basename(command[0]), *command[1:]]), returncode,
            kustomize_message(stderr.decode("utf-8", "replace"), settings.root)), rel)
    return iter_yaml_documents(_decode(stdout, rel), rel, budget=settings.budget)


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

#: Most values one document may expand to (aliases count each time they are used): stops YAML alias
#: bombs ("billion laughs") before they eat the controller's memory. 1 MiB of real manifest is far less.
MAX_DOCUMENT_VALUES = 1000000


def _plain(value, where, budget=None):
    """Recursively make ``value`` JSON-compatible: string keys, plain containers.

    ``budget`` (a one-item list) counts the values produced, aliases expanded; past
    :data:`MAX_DOCUMENT_VALUES` the document is refused.
    """
    if budget is None:
        budget = [MAX_DOCUMENT_VALUES]
    budget[0] -= 1
    if budget[0] < 0:
        raise where("the document expands to more than %d values through YAML anchors and aliases "
                    "(an alias bomb?): refusing it, over the limit" % MAX_DOCUMENT_VALUES)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                if isinstance(key, bool):
                    key = "true" if key else "false"
                elif key is None:
                    key = "null"
                elif isinstance(key, (int, float)):
                    key = str(key)
                else:
                    raise where("mapping key %r is not a string" % (key,))
            out[key] = _plain(item, where, budget)
        return out
    if isinstance(value, list):
        return [_plain(item, where, budget) for item in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise where("unsupported YAML value of type %s" % type(value).__name__)


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
           kustomize_timeout=DEFAULT_KUSTOMIZE_TIMEOUT, seen=None, origin=None, kustomize_remote=False):
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
