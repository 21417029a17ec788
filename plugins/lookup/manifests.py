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
  - C(*.j2) files (for example C(configmap.yaml.j2)) are Jinja2 templates. A repository's templates are input,
    not code, so they render B(in a sandbox) unless O(trusted=true) (see O(trusted) and the collection's
    C(docs/security.md)). A sandboxed template gets only O(template_vars) and C(inventory_hostname) (never
    C(hostvars), other variables of the play or any credential); it cannot run lookups (C(lookup), C(query), C(q));
    it may include, import or extend only files under the term's directory, by a relative path without C(..);
    it may use the filters and tests listed under O(trusted) and no attribute starting with C(_). Its output is at
    most O(max_file_size) characters. A template that uses what it may not fails, naming the file, the line and
    what was refused, before anything is returned.
  - With O(trusted=true), templates are rendered with the play's variables and every filter, test and lookup,
    like M(ansible.builtin.template), for repositories whose every author may run code on the controller.
  - Files encrypted with ansible-vault and inline C(!vault) values are decrypted with the play's vault secrets of
    the vault ids in O(vault_id) only (with O(trusted=true) and no O(vault_id), with all of them), so that a vault
    value copied from another tenant's repository (or from the inventory) is not decrypted here.
  - A directory containing C(kustomization.yaml), C(kustomization.yml) or C(Kustomization) is rendered with
    C(kustomize build) (or C(kubectl kustomize) when no C(kustomize) binary is on E(PATH)); its files are not
    also read one by one.
  - A kustomize Component (a directory below the term whose kustomization's C(kind) is C(Component)) is not rendered on
    its own; the kustomizations that list it in C(components) apply it to their resources.
  - Kustomizations load files from their own directory only (kustomize's C(--load-restrictor LoadRestrictionsRootOnly),
    written out in the default command). Before kustomize runs, the kustomization and every local kustomization it
    refers to are read, and a reference that resolves outside O(root) is refused, as is, unless
    O(kustomize_remote=true), every remote one (like Flux's C(--no-remote-bases)) - a URL or git repository in
    C(resources), C(bases), C(components), C(generators), C(transformers), C(validators), C(crds),
    C(configurations), C(patches), C(patchesStrategicMerge), C(patchesJson6902), C(replacements), C(openapi),
    generator C(files) / C(envs), or a Helm chart repository - naming the kustomization file and the reference.
    kustomize's output is refused past 8 times O(max_file_size).
  - Hidden files and directories (C(.git), C(.github), ...) and files that are not manifests are ignored.
  - Symbolic links and C(..) components that resolve outside O(root) are refused.
  - Any problem (invalid YAML or JSON, a document that is not a mapping, a missing or malformed C(apiVersion),
    C(kind) or C(metadata.name), C(metadata.generateName), a name or namespace the API server would refuse
    (DNS-1123 rules), a non-string name, namespace, label or annotation value, an invalid label key or value,
    the same object defined twice, undecryptable vault data, a template error, a kustomize failure, a file over
    O(max_file_size), bytes that are not UTF-8, YAML anchors and aliases that expand a document past 32 MiB or
    1,000,000 values, or the documents of the tree past 128 MiB in all) fails the lookup with an error naming the
    file, the document index and, where known, the line (for a YAML error, where it fails and where the construct
    it was reading starts, as PyYAML marks them in the whole file). Nothing is returned for a broken tree.
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
    description:
      - Variables for C(*.j2) templates. In the sandbox (the default), these and C(inventory_hostname) are the only
        variables a template gets; with O(trusted=true), they are added to the play's variables.
    type: dict
    default: {}
  trusted:
    description:
      - Render C(*.j2) templates with full Ansible templating (the play's variables, every filter, test and
        lookup, includes from anywhere), and decrypt vault data with every vault secret of the play unless
        O(vault_id) is set. B(A template can then run commands on the controller, read its files and copy every
        variable of the play, credentials included, into a manifest), so it is only for repositories whose authors are
        as trusted as the playbook's.
      - V(false) (the default) renders them in a sandbox. Its variables are O(template_vars) and
        C(inventory_hostname). Its globals are C(range) (at most 100000 items), C(dict), C(namespace), C(cycler),
        C(joiner). Its filters are Jinja2's own (but C(random)) and these of Ansible, each also as
        C(ansible.builtin.<name>) - C(to_yaml), C(to_nice_yaml), C(to_json), C(to_nice_json), C(from_json),
        C(b64encode), C(b64decode), C(regex_replace), C(regex_search), C(regex_findall), C(regex_escape), C(bool),
        C(ternary), C(mandatory), C(split), C(quote), C(type_debug), C(hash), C(md5), C(sha1), C(checksum),
        C(to_uuid), C(combine), C(dict2items), C(items2dict), C(flatten), C(union), C(intersect), C(difference),
        C(symmetric_difference), C(zip), C(zip_longest), C(log), C(root), C(basename), C(dirname), C(splitext),
        C(normpath), C(path_join), C(urlsplit), C(urldecode). Its tests are Jinja2's own and C(match), C(search),
        C(regex), C(version), C(version_compare), C(subset), C(superset), C(contains), C(any), C(all), C(truthy),
        C(falsy). Widths, counts and repetitions are bounded (10000; a value at most O(max_file_size)).
      - A kustomize_command that relaxes kustomize (C(LoadRestrictionsNone), C(--enable-helm), C(--enable-exec),
        C(--enable-alpha-plugins), C(--network), C(--mount)) is refused unless O(trusted=true).
    type: bool
    default: false
  vault_id:
    description:
      - The vault ids (the labels of C(--vault-id label@source); C(default) for C(--vault-password-file) or
        C(--ask-vault-pass)) whose secrets may decrypt this tree's vault-encrypted files and C(!vault) values.
        Vault data that none of them decrypts fails the lookup, naming the file (and the vault id it is
        encrypted for, when its header says).
      - Empty (the default) - no vault data is decrypted, unless O(trusted=true), which uses every secret of the play.
    type: list
    elements: str
    default: []
  kustomize_remote:
    description:
      - Let kustomizations refer to remote bases, resources, components and files (git repositories and URLs,
        which kustomize fetches from the network on the controller). V(false) (the default) refuses them before
        kustomize runs.
      - Never allowed - a C(file:) URL (the controller's own files), a query value git would read as an option
        (C(?ref=--upload-pack=...)).
    type: bool
    default: false
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
    still returns a list. Without it, Ansible returns the only manifest of such a tree as a mapping, not a list of
    one (and an empty list for an empty tree); the O(stacksync.k8s.stack#module:resources) of
    M(stacksync.k8s.stack) and M(stacksync.k8s.stack_info) take that mapping as a list of one, but a loop or a
    C(length) over it would see the manifest's keys.
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

- name: Templates (sandboxed) get template_vars and inventory_hostname only; vault values of vault id team-a
  ansible.builtin.set_fact:
    manifests: "{{ query('stacksync.k8s.manifests', 'manifests', template_vars={'replicas': 3}, vault_id=['team-a']) }}"

- name: A repository of the playbook's own authors, templated with the play's variables and lookups
  ansible.builtin.set_fact:
    manifests: "{{ query('stacksync.k8s.manifests', 'platform/manifests', trusted=true) }}"
"""

RETURN = r"""
_list:
  description:
    - The manifests, one dictionary per Kubernetes object, in deterministic order.
    - Values are plain strings, numbers, booleans, lists and dictionaries (vault values decrypted).
  type: list
  elements: dict
"""

from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.plugin_utils import bytecode  # noqa: E402

bytecode.install()  # the render's modules imported next are read from their __pycache__ (plugin_utils/bytecode.py)

from ansible_collections.stacksync.k8s.plugins.plugin_utils.rendering import DEFAULTS, render_terms  # noqa: E402


class LookupModule(LookupBase):
    """The lookup's options, then :func:`.plugin_utils.rendering.render_terms` (what the stack and sources actions
    call directly)."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        options = dict((name, self.get_option(name)) for name in DEFAULTS)
        return render_terms(terms, variables, self._loader, self._templar, **options)
