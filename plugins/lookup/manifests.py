# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: manifests
author: stacksync.k8s contributors (@stacksync)
version_added: "0.1.0"
short_description: Render a directory of Kubernetes manifests into a validated list
description:
  - Reads every Kubernetes manifest under a directory on the controller and returns them as a list of
    dictionaries, in a deterministic order (files sorted by path, documents in file order).
  - C(*.yaml), C(*.yml) and C(*.json) files are read; multi-document YAML is split and empty documents are
    skipped; a C(List) (any kind ending in C(List) that holds C(items)) is flattened into its items.
  - C(*.j2) files (for example C(configmap.yaml.j2)) are Jinja2 templates rendered with the play's variables,
    like M(ansible.builtin.template).
  - Files encrypted with ansible-vault and inline C(!vault) values are decrypted with the play's vault secrets.
  - A directory containing C(kustomization.yaml), C(kustomization.yml) or C(Kustomization) is rendered with
    C(kustomize build) (or C(kubectl kustomize) when no C(kustomize) binary is on E(PATH)); its files are not
    also read one by one.
  - A kustomize Component (a directory below the term whose kustomization's C(kind) is C(Component)) is not rendered on
    its own; the kustomizations that list it in C(components) apply it to their resources.
  - Hidden files and directories (C(.git), C(.github), ...) and files that are not manifests are ignored.
  - Symbolic links and C(..) components that resolve outside O(root) are refused.
  - Any problem (invalid YAML or JSON, a document that is not a mapping, a missing or malformed C(apiVersion),
    C(kind) or C(metadata.name), C(metadata.generateName), a name or namespace the API server would refuse
    (DNS-1123 rules), a non-string name, namespace, label or annotation value, an invalid label key or value,
    the same object defined twice, undecryptable vault data, a template error, a kustomize failure, a file over
    O(max_file_size), bytes that are not UTF-8) fails the lookup with an error naming the file, the document
    index and, where known, the line. Nothing is returned for a broken tree.
  - Manifests are checked with the same rules as the M(stacksync.k8s.stack) module checks them, so a tree the
    lookup returns is never refused by the module for its shape.
  - The file is named by its path relative to O(root) when O(root) is set (its path in the repository; the
    checkout's directory on the controller is never named, not even in kustomize's or a template's own
    messages), else relative to the term, and the term is named once, at the end of the message.
  - Files are read as C(kubectl apply -f) reads them, whatever their extension. A file whose first non-blank
    character is C({) is a stream of JSON values; any other file is YAML, split into documents on lines
    starting with C(---). YAML values are the ones kubectl sends, from go-yaml v2's YAML 1.1 rules, so
    C(yes), C(on) and C(y) are booleans, C(0o17) and C(017) are the integer 15, C(1:20) is a string and
    C(=) is a string. C(1.0) and C(1e3) are integers. Timestamps stay strings. C(!!binary) values are
    decoded. Merge keys (C(<<)) apply in document order. Unknown tags are ignored. Keys that are not strings
    become strings (C(y:) becomes C("true")).
  - Two things kubectl accepts are errors here, because each silently drops data. A key written twice in one
    mapping (kubectl keeps the last value), and content after a C(...) document end marker (kubectl ignores
    it). See C(docs/yaml.md) in the collection.
options:
  _terms:
    description:
      - Directories (or single manifest files) to render. Relative paths are relative to the playbook directory.
      - The manifests of all terms are returned in one list; duplicates are detected across terms.
    type: list
    elements: path
    required: true
  root:
    description:
      - The checkout the terms belong to. Nothing that resolves outside it (through symbolic links or C(..)) is read.
      - This includes the local C(resources), C(bases) and C(components) of kustomizations (checked recursively);
        remote kustomize references (URLs) are left to kustomize.
      - Defaults to each term itself. A relative path is relative to the playbook directory, like the terms.
    type: str
  include:
    description:
      - Glob patterns, relative to the term, of the files to read. If set, only matching files are read.
      - C(*) and C(?) do not match C(/); C(**) matches any number of directories.
        A pattern matching a directory selects everything under it.
      - A kustomization directory is selected if the directory or its C(kustomization.yaml) matches.
    type: list
    elements: str
    default: []
  exclude:
    description:
      - Glob patterns, relative to the term, of files and directories to skip (same syntax as O(include)).
        Exclusion wins over inclusion.
    type: list
    elements: str
    default: []
  recursive:
    description: Descend into subdirectories.
    type: bool
    default: true
  max_file_size:
    description: Refuse manifest files larger than this many bytes. C(0) disables the limit.
    type: int
    default: 10485760
  source_annotation:
    description:
      - Add the annotation C(stacksync.io/source) with C(<file>#<document index>) to every manifest, the file named by
        its path relative to O(root) when that is set, else relative to the term
        (for kustomize output, the directory and the index in the kustomize output).
      - The M(stacksync.k8s.stack) module removes it before applying, so it never reaches the cluster.
    type: bool
    default: true
  template_vars:
    description: Extra variables available to C(*.j2) templates, on top of the play's variables.
    type: dict
    default: {}
  kustomize_command:
    description:
      - Command that renders a kustomization directory; the directory is appended as the last argument.
      - Defaults to C(kustomize build) when a C(kustomize) binary is on E(PATH), else C(kubectl kustomize).
    type: list
    elements: str
  kustomize_timeout:
    description: Seconds to wait for kustomize to render one directory.
    type: int
    default: 300
notes:
  - Runs on the controller. Use C(query) instead of C(lookup) (or pass O(ignore:wantlist=true)) so a tree holding a single manifest
    still returns a list.
  - Duplicates are detected by API group, kind, namespace as written in the manifest and name.
  - Document indexes start at 0 and count every document of a file, empty ones included.
seealso:
  - module: stacksync.k8s.stack
  - plugin: stacksync.k8s.stack_name
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Render the manifests of a checkout
  ansible.builtin.set_fact:
    manifests: "{{ query('stacksync.k8s.manifests', checkout ~ '/clusters/prod', root=checkout) }}"

- name: Only the apps, without the legacy ones, and without the source annotation
  ansible.builtin.debug:
    msg: >-
      {{ query('stacksync.k8s.manifests', 'manifests',
               include=['apps/**'], exclude=['apps/legacy'], source_annotation=false) }}

- name: Templates get the play's variables plus template_vars
  ansible.builtin.set_fact:
    manifests: "{{ query('stacksync.k8s.manifests', 'manifests', template_vars={'replicas': 3}) }}"
"""

RETURN = r"""
_list:
  description:
    - The manifests, one dictionary per Kubernetes object, in deterministic order.
    - Values are plain strings, numbers, booleans, lists and dictionaries (vault values decrypted).
  type: list
  elements: dict
"""

import copy  # noqa: E402
import os  # noqa: E402

from ansible.errors import AnsibleError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import RenderError, render  # noqa: E402

try:  # ansible-core >= 2.19: only trusted strings are templated
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - ansible-core < 2.19
    def trust_as_template(value):
        return value


def error_message(exc, path, root):
    """The lookup's message for a RenderError: the file first. With a ``root`` (the checkout), the file is
    named by its path in the repository and the checkout's directory on the controller is never named;
    without one, the file is relative to the term, named once at the end."""
    if exc.path is None or root:  # the problem names the path itself, or the path is the repository's
        return "stacksync.k8s.manifests: %s" % exc.message
    return "stacksync.k8s.manifests: %s (in %s)" % (exc.message, path)


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables if variables is not None else {}

        root = self.get_option("root")
        options = dict(
            include=self.get_option("include"),
            exclude=self.get_option("exclude"),
            recursive=self.get_option("recursive"),
            max_file_size=self.get_option("max_file_size"),
            source_annotation=self.get_option("source_annotation"),
            kustomize=self.get_option("kustomize_command") or None,
            kustomize_timeout=self.get_option("kustomize_timeout"),
            decrypt=self._decrypt,
        )
        template_vars = self.get_option("template_vars")

        manifests = []
        seen = {}
        for term in terms:
            path = self._loader.path_dwim(str(term))
            term_root = self._loader.path_dwim(root) if root else None
            try:
                manifests.extend(render(
                    path, root=term_root,
                    template=self._template_hook(variables, template_vars, path),
                    seen=seen, origin=(path.rstrip("/") + "/") if len(terms) > 1 and not root else None,
                    **options))
            except RenderError as exc:
                # from None: ansible-core >= 2.19 appends the cause's message, which this one already holds
                raise AnsibleError(error_message(exc, path, term_root)) from None
        return manifests

    def _decrypt(self, b_vaulttext):
        """Decrypt vault data with the play's vault secrets (the ones the loader was given)."""
        return self._loader._vault.decrypt(b_vaulttext)  # pylint: disable=protected-access

    def _template_hook(self, variables, template_vars, base):
        templar = self._templar
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
