# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendering for a task: :func:`render_terms`, what the manifests lookup does, as a function.

The lookup ``stacksync.k8s.manifests`` calls it with its options; the ``stack`` and ``sources`` actions call it
directly with the task's loader, templar and variables (no lookup plugin loaded on the way). It binds
:func:`.render.render` to the task: templates in the sandbox (:mod:`.sandbox`) or, trusted, with ansible-core's
templating and the play's variables; vault data decrypted with the play's secrets of the vault ids named only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import time

from ansible.errors import AnsibleError
from ansible.parsing.vault import VaultLib
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import RenderError, render
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render_kustomize import relaxing_flags
from ansible_collections.stacksync.k8s.plugins.plugin_utils.sandbox import PLAY_VARIABLES, plain_variables
from ansible_collections.stacksync.k8s.plugins.plugin_utils.sandbox_limits import BoundedTemplates

try:  # ansible-core >= 2.19: only trusted strings are templated
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - ansible-core < 2.19
    def trust_as_template(value):
        return value

#: the lookup's options and their defaults, as its DOCUMENTATION states them (the unit tests compare them)
DEFAULTS = dict(root=None, include=[], exclude=[], recursive=True, max_file_size=10485760, source_annotation=True,
                template_vars={}, trusted=False, vault_id=[], kustomize_remote=False, kustomize_command=None,
                kustomize_timeout=300)


#: CPU seconds the vault data of one render (of a source that is not trusted) may cost: each value encrypted with
#: its own salt costs a key derivation (PBKDF2, ~5 ms), so a file of many values could hold the controller's CPU
VAULT_CPU_SECONDS = 30


def error_message(exc, path, root):
    """The lookup's message for a RenderError: the file first. With a ``root`` (the checkout), the file is
    named by its path in the repository and the checkout's directory on the controller is never named;
    without one, the file is relative to the term, named once at the end."""
    if exc.path is None or root:  # the problem names the path itself, or the path is the repository's
        return "stacksync.k8s.manifests: %s" % exc.message
    return "stacksync.k8s.manifests: %s (in %s)" % (exc.message, path)


def encrypted_for(b_vaulttext):
    """The vault id a vault envelope's header names (``$ANSIBLE_VAULT;1.2;AES256;<vault id>``), else ``None``."""
    header = b_vaulttext.lstrip().split(b"\n", 1)[0].strip().split(b";")
    if len(header) >= 4 and header[0] == b"$ANSIBLE_VAULT" and header[3]:
        return header[3].decode("utf-8", "replace")
    return None


def render_terms(terms, variables, loader, templar, **options):
    """The manifests of ``terms`` (paths, relative to the playbook's directory through ``loader``), rendered with
    the lookup's ``options`` (:data:`DEFAULTS` for those not given); raises ``AnsibleError`` naming the file."""
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise TypeError("unknown rendering option(s): %s" % ", ".join(unknown))
    o = dict(DEFAULTS, **dict((k, v) for k, v in options.items() if v is not None))  # None: not given
    variables = variables if variables is not None else {}
    trusted, kustomize_command = o["trusted"], o["kustomize_command"] or None
    if not trusted and relaxing_flags(kustomize_command):
        raise AnsibleError("stacksync.k8s.manifests: kustomize_command %s lets kustomizations reach outside their "
                           "repository: refused unless trusted is true" % " ".join(relaxing_flags(kustomize_command)))
    kwargs = dict(include=o["include"], exclude=o["exclude"], recursive=o["recursive"],
                  max_file_size=o["max_file_size"], source_annotation=o["source_annotation"],
                  kustomize=kustomize_command, kustomize_timeout=o["kustomize_timeout"],
                  kustomize_remote=o["kustomize_remote"], kustomize_identity=trusted,
                  decrypt=decrypter(loader, o["vault_id"], trusted))
    manifests, seen = [], {}
    for term in terms:
        path = loader.path_dwim(str(term))
        term_root = loader.path_dwim(o["root"]) if o["root"] else None
        if trusted:
            template = template_hook(templar, variables, o["template_vars"], path)
        else:
            template = sandbox_hook(variables, o["template_vars"], path, o["max_file_size"])
        try:
            manifests.extend(render(path, root=term_root, template=template, seen=seen,
                                    origin=(path.rstrip("/") + "/") if len(terms) > 1 and not o["root"] else None,
                                    **kwargs))
        except RenderError as exc:
            # from None: ansible-core >= 2.19 appends the cause's message, which this one already holds
            raise AnsibleError(error_message(exc, path, term_root)) from None
        finally:
            if hasattr(template, "close"):  # the process of the sandboxed templates (sandbox_limits)
                template.close()
    return manifests


def decrypter(loader, vault_ids, trusted):
    """``decrypt(b_vaulttext)`` with the play's vault secrets (``loader``'s) of the vault ids ``vault_ids`` only
    (every secret when trusted and none is named)."""
    vault = loader._vault  # pylint: disable=protected-access
    vault_ids = vault_ids or []
    if trusted and not vault_ids:
        return vault.decrypt
    secrets = [(vid, secret) for vid, secret in (vault.secrets or []) if vid in vault_ids]
    bound = VaultLib(secrets)
    spent = [0.0, 0]  # CPU seconds and values decrypted in this render

    def decrypt(b_vaulttext):
        label = encrypted_for(b_vaulttext)
        label = " (it is encrypted for vault id %r)" % label if label else ""
        if not vault_ids:
            raise AnsibleError("vault data is decrypted only with the vault ids named in vault_id, and none is "
                               "named%s: set vault_id to the vault id(s) this repository's secrets are encrypted "
                               "with (default for --vault-password-file)" % label)
        if not secrets:
            raise AnsibleError("the play has no vault secret of the vault id(s) in vault_id (%s)%s"
                               % (", ".join(vault_ids), label))
        if spent[0] > VAULT_CPU_SECONDS:
            raise AnsibleError("decrypting this repository's vault data took more than %d s of CPU time (%d decrypted "
                               "so far, each a key derivation): refused" % (VAULT_CPU_SECONDS, spent[1]))
        started = time.process_time()
        try:
            return bound.decrypt(b_vaulttext)
        except AnsibleError:
            raise AnsibleError("no vault secret of the vault id(s) in vault_id (%s) decrypts it%s"
                               % (", ".join(vault_ids), label)) from None
        finally:
            spent[0] += time.process_time() - started
            spent[1] += 1

    return decrypt


def sandbox_hook(variables, template_vars, base, max_output):
    """Templates rendered in the sandbox: ``template_vars`` and :data:`.sandbox.PLAY_VARIABLES` only, includes
    confined to the term's directory."""
    given = dict((k, variables[k]) for k in PLAY_VARIABLES if k in variables)
    given.update(template_vars or {})
    given = plain_variables(given)
    directory = base if os.path.isdir(base) else os.path.dirname(base)

    return BoundedTemplates(directory, given, max_output)


def template_hook(templar, variables, template_vars, base):
    """Templates rendered with full Ansible templating (a trusted source): the play's variables."""
    cache = {}

    def template(text, path):
        if "vars" not in cache:
            if template_vars:
                merged = copy.deepcopy(variables)
                merged.update(template_vars)
                cache["vars"] = merged
            else:
                cache["vars"] = variables
        searchpath = [os.path.dirname(path), base]
        if hasattr(templar, "evaluate_expression"):  # ansible-core >= 2.19
            data_templar = templar.copy_with_new_env(available_variables=cache["vars"], searchpath=searchpath)
            return data_templar.template(trust_as_template(text), preserve_trailing_newlines=True,
                                         escape_backslashes=False)
        with templar.set_temporary_context(available_variables=cache["vars"], searchpath=searchpath):
            return templar.template(text, preserve_trailing_newlines=True, escape_backslashes=False,
                                    convert_data=False)

    return template
