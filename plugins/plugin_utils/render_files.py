# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manifest files of a render (see :mod:`.render`): YAML and JSON read as kubectl reads them (:mod:`.kubeyaml`),
with their anchors' expansion bounded; vault-encrypted files and ``!vault`` values decrypted with the render's hook;
``*.j2`` templates rendered with its template hook (the sandbox, or ansible-core's templating)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import stat

import yaml
from ansible.errors import AnsibleError
from ansible_collections.stacksync.k8s.plugins.plugin_utils.kubeyaml import (
    MAX_FLOW_DEPTH,
    ExpansionError,
    KubectlLoader,
    expansion,
    is_json_stream,
    iter_json_values,
    split_documents,
    too_deep,
)
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render_common import RenderError, _decode, _msg
from ansible_collections.stacksync.k8s.plugins.plugin_utils.sandbox import TemplateFailure

VAULT_HEADER = b"$ANSIBLE_VAULT;"

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
    if too_deep(chunk):  # before libyaml composes it (a C stack overflow kills the process)
        raise RenderError("the document nests flow collections ([ and {) more than %d levels deep" % MAX_FLOW_DEPTH, rel,
                          doc=index, line=first_line)
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
        problem += helm_hint(chunk)
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


def is_vault_data(b_data):
    return b_data.lstrip().startswith(VAULT_HEADER)


#: how a Git LFS pointer file begins (what a checkout holds for a file stored in LFS: filters do not run)
LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def _file_documents(unit, settings):
    b_data = _read_bytes(unit, settings.max_file_size)
    if b_data.startswith(LFS_POINTER):
        raise RenderError("is a Git LFS pointer: a checkout does not fetch LFS content (no filter of a repository "
                          "runs); commit the manifest itself", unit.rel)
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


#: Go template actions on a dot (Helm's ``{{ .Values.x }}``, ``{{- .Release.Name }}``, ``{{ include "x" . }}``)
_GO_TEMPLATE = re.compile(r"\{\{-?\s*(\.[A-Za-z]|include\s|template\s|toYaml\s)")


def helm_hint(text):
    """A hint for a text holding Go template actions (a Helm chart's template), else ``""``."""
    if not _GO_TEMPLATE.search(text or ""):
        return ""
    return (" (this looks like a Helm chart's Go template: {{ .Values.x }} is not YAML, and *.j2 files are Jinja2 "
            "({{ x }}, with x in the source's vars); render a chart with helm template into git, or with "
            "kustomize's helmCharts)")


def _rendered(unit, text, settings):
    """The text a template renders to (its output refused past ``max_file_size``)."""
    if settings.template is None:
        raise RenderError("is a template but no templating engine is available", unit.rel)
    try:
        rendered = settings.template(text, unit.path)
    except RenderError:
        raise
    except TemplateFailure as exc:  # the sandbox: what it refused or what failed, and where
        raise RenderError(exc.problem + helm_hint(text), unit.rel, line=exc.line) from None
    except Exception as exc:  # pylint: disable=broad-except  # any templating failure
        raise RenderError("template error: %s%s" % (_msg(exc), helm_hint(text)), unit.rel) from exc
    if isinstance(rendered, (dict, list)):  # a template that is a single expression
        rendered = json.dumps(rendered)
    # a plain str: ansible-core 2.16's unsafe text is a subclass whose str() is itself, which libyaml refuses
    rendered = "".join([str(rendered)])
    if settings.max_file_size and len(rendered) > settings.max_file_size:
        raise RenderError("the template's output is over the %d byte limit (max_file_size)" % settings.max_file_size,
                          unit.rel)
    return rendered
