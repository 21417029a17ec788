# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every kind of source of a render shares: :class:`RenderError` (naming the file, the document and the line),
paths joined and made relative in messages, UTF-8 text. See :mod:`.render`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleError


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


def _join(prefix, name):
    return prefix + "/" + name if prefix else name


def _msg(exc):
    return getattr(exc, "message", None) or str(exc)


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
