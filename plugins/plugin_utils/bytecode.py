# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's controller-side Python imported with the standard library's bytecode cache.

ansible-core's collection loader compiles a collection's modules from source in every process that imports them
(``_AnsibleCollectionPkgLoaderBase.get_code``): compiling the engine's ~60 modules cost every task 0.15 s of CPU
before it did anything, where Python's own import reads them from ``__pycache__`` in a few hundredths.

:func:`install` puts :class:`CachedSourceFinder` on ``sys.meta_path`` just before ansible-core's collection finder:
it finds the plain modules (``name.py``, never a package) of this collection's ``module_utils`` and ``plugin_utils``
in their package's directory, where ansible-core's finder would, and has them imported by the standard
``importlib.machinery.SourceFileLoader``: the same file, compiled once and then read from its ``__pycache__``, checked
against the source's size and time as for any installed package (written only where the process may write, and
never under ``PYTHONDONTWRITEBYTECODE`` or ``sys.dont_write_bytecode``). Packages, the other collections and every
other name stay with ansible-core's finder; without that finder (no ansible-core collection loader in the process)
nothing is installed. A module process (AnsiballZ) is built from the sources and never uses it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import os
import sys

#: the names it imports: this collection's controller-side Python (its plugins are ansible-core's to load)
PREFIXES = ("ansible_collections.stacksync.k8s.plugins.module_utils.", "ansible_collections.stacksync.k8s.plugins.plugin_utils.")
#: the class of ansible-core's collection finder on ``sys.meta_path``
ANSIBLE_FINDER = "_AnsibleCollectionFinder"


def module_file(fullname, path):
    """The source file of module ``fullname`` in one of ``path`` (its package's ``__path__``), or None: a package
    (a directory of that name) or anything not found is left to the other finders."""
    leaf = fullname.rpartition(".")[2]
    for entry in path or ():
        if not isinstance(entry, str):
            continue
        if os.path.isdir(os.path.join(entry, leaf)):
            return None  # a package (or a namespace): ansible-core's finder decides
        candidate = os.path.join(entry, leaf + ".py")
        if os.path.isfile(candidate):
            return candidate
    return None


class CachedSourceFinder:
    """A meta path finder of the plain modules named ``PREFIXES...``: :mod:`importlib`'s source loader, which
    keeps their bytecode in ``__pycache__``."""

    def __init__(self, prefixes=PREFIXES):
        self.prefixes = tuple(prefixes)

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self.prefixes) or not path:
            return None
        source = module_file(fullname, path)
        if source is None:
            return None
        loader = importlib.machinery.SourceFileLoader(fullname, source)
        return importlib.util.spec_from_file_location(fullname, source, loader=loader)

    def invalidate_caches(self):
        return None


def install(meta_path=None):
    """Put a :class:`CachedSourceFinder` before ansible-core's collection finder on ``meta_path`` (``sys.meta_path``)
    once; True if one is there. Not without ansible-core's finder."""
    meta_path = sys.meta_path if meta_path is None else meta_path
    if any(type(f).__name__ == CachedSourceFinder.__name__ for f in meta_path):  # this one, or a copy imported again
        return True
    for i, finder in enumerate(meta_path):
        if type(finder).__name__ == ANSIBLE_FINDER:
            meta_path.insert(i, CachedSourceFinder())
            return True
    return False
