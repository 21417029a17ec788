# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kustomization directories of a render (see :mod:`.render`): checked first (:mod:`.kustomize`), then built by
kustomize (or ``kubectl kustomize``) with the root-only load restrictor, bounded in time and output, its errors in
plain words."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shutil
import subprocess
import tempfile

from ansible_collections.stacksync.k8s.plugins.plugin_utils.kustomize import (
    KustomizationRefused,
    OutOfMemory,
    OutputTooLarge,
    check_tree,
    kustomize_environment,
    run_bounded,
)
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render_common import RenderError, _decode, relative_text
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render_files import iter_yaml_documents

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
#: kustomize's heap is bounded to this many times its output limit, and at least :data:`KUSTOMIZE_MEMORY` (it
#: needs about 15 times its output: 8 MB of ConfigMaps took 116 MB)
KUSTOMIZE_MEMORY_FACTOR = 16
KUSTOMIZE_MEMORY = 1 << 30


def kustomize_memory(max_file_size):
    """The bound of kustomize's heap, in bytes, for a render of ``max_file_size`` (0: no limit on the output)."""
    return max(KUSTOMIZE_MEMORY, KUSTOMIZE_MEMORY_FACTOR * KUSTOMIZE_OUTPUT_FACTOR * (max_file_size or 0))


def _kustomize_documents(unit, settings):
    rel = unit.rel + "/"
    try:
        check_tree(unit.path, settings.root, allow_remote=settings.kustomize_remote, max_size=settings.max_file_size)
    except KustomizationRefused as exc:
        raise RenderError(str(exc), rel) from None
    command = settings.kustomize
    if command is None:
        command = default_kustomize_command()
    if not command:
        raise RenderError("is a kustomization but neither kustomize nor kubectl is on PATH", rel)
    argv = [*command, unit.path]
    limit = settings.max_file_size * KUSTOMIZE_OUTPUT_FACTOR
    memory = kustomize_memory(settings.max_file_size)
    try:
        with tempfile.TemporaryDirectory(prefix="stacksync-kustomize-") as home:
            returncode, stdout, stderr = run_bounded(
                argv, unit.path, settings.kustomize_timeout, limit, memory=memory,
                env=kustomize_environment(home=None if settings.kustomize_identity else home))
    except OutOfMemory:
        raise RenderError("kustomize needed more than its %d MB of memory: stopped" % (memory >> 20), rel) from None
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
