# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of a stack run, declared once: :data:`OPTIONS`.

Each row says what module ``stacksync.k8s.stack`` takes (type, default, choices), whether ``stack_info`` takes it
too, what the engine calls it (:class:`.options.StackOptions`, its default there when it has another), which variable
of role ``stacksync.k8s.sync`` sets it, and what it is in one line. The module's argument spec
(:data:`.runner.ARGUMENT_SPEC`), ``stack_info``'s (:data:`.info.ARGUMENT_SPEC`), the engine's defaults
(:data:`.options.DEFAULTS`) and the parameters-to-options step (:func:`.options.options_from_params`) are made from
it. The connection options (:data:`.auth.AUTH_ARG_SPEC`) and the confinement (:data:`.confinement.POLICY_SPEC`)
have their own single specs, shared with other modules.

The modules' DOCUMENTATION stays literal YAML (ansible-doc and the sanity tests read it without running anything):
``tests/unit/plugins/module_utils/base/test_stack_spec.py`` checks that it, and the role's ``meta/argument_specs.yml``
under the role's variable names, say what this table says.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import DEFAULT_FIELD_MANAGER

#: suboptions of ``render``: how the action plugin renders ``src``. The manifests lookup's options;
#: no defaults here, an option not given gets the lookup's own default.
RENDER_SPEC = dict(
    root=dict(type="path"),
    include=dict(type="list", elements="str"),
    exclude=dict(type="list", elements="str"),
    recursive=dict(type="bool"),
    template_vars=dict(type="dict"),
    max_file_size=dict(type="int"),
    kustomize_command=dict(type="list", elements="str"),
    kustomize_timeout=dict(type="int"),
    trusted=dict(type="bool"),
    vault_id=dict(type="list", elements="str", no_log=False),
    kustomize_remote=dict(type="bool"),
)
WAIT_CONDITION_SPEC = dict(
    kind=dict(type="str", required=True),
    group=dict(type="str"),
    expression=dict(type="str", required=True),
)

#: the engine takes the option under its own name (:attr:`Option.attr` says which), not at all, or the module's
#: default is not the engine's (:attr:`Option.engine_default`)
ENGINE, NOT_ENGINE, MODULE_DEFAULT = "engine", None, object()

_FIELDS = ("name", "type", "default", "choices", "elements", "info", "engine", "engine_default", "role", "doc",
           "extra")


class Option(namedtuple("Option", _FIELDS)):
    """One option of module ``stack``: see the module docstring. ``engine`` is :data:`ENGINE` (the engine's name is
    the option's), another name, or :data:`NOT_ENGINE`; ``role`` is the role's variable (None: the role has none);
    ``extra`` the rest of its argument spec (``required``, ``options``)."""

    __slots__ = ()

    @property
    def attr(self):
        """The engine's name of the option (None: not an engine option)."""
        return self.name if self.engine == ENGINE else self.engine

    def spec(self, without_default=False):
        """The option's argument spec (a new dict)."""
        out = dict(type=self.type)
        if self.default is not None and not without_default:
            out["default"] = list(self.default) if isinstance(self.default, list) else self.default
        if self.choices:
            out["choices"] = list(self.choices)
        if self.elements:
            out["elements"] = self.elements
        out.update(self.extra or {})
        return out


def _o(name, type="str", default=None, choices=None, elements=None, info=False, engine=ENGINE,
       engine_default=MODULE_DEFAULT, role=False, doc="", **extra):
    return Option(name, type, default, choices, elements, info, engine, engine_default,
                  "stacksync_" + name if role else None, doc, extra)


# The rows in the order of the module's documentation. ``info``: stack_info takes it too (with this default,
# except ``resources``: see :func:`info_spec`).
OPTIONS = (
    _o("name", required=True, info=True, engine=NOT_ENGINE, doc="the stack's name (the engine's stack)"),
    _o("resources", "list", [], elements="dict", info=True, engine=NOT_ENGINE, doc="the desired manifests"),
    _o("resources_file", "path", engine=NOT_ENGINE, doc="a JSON file holding the desired manifests"),
    _o("src", "path", info=True, engine=NOT_ENGINE, doc="a directory on the controller rendered as the lookup does"),
    _o("render", "dict", info=True, engine=NOT_ENGINE, options=RENDER_SPEC, doc="how src is rendered"),
    _o("state", default="present", choices=("present", "absent"), engine=NOT_ENGINE,
       doc="present converges the stack, absent deletes it"),
    _o("phase", default="all", choices=("all", "apply", "prune"), doc="apply, prune, or both"),
    _o("prune", "bool", True, role=True, doc="delete what the stack no longer declares"),
    _o("allow_empty", "bool", False, role=True, doc="allow pruning to an empty desired set"),
    _o("propagation_policy", default="Background", choices=("Background", "Foreground", "Orphan"), role=True,
       doc="the deletion propagation policy of prunes"),
    _o("namespace", info=True, engine_default="default",
       doc="namespace of the namespaced objects that name none (else the context's, else default)"),
    _o("field_manager", default=DEFAULT_FIELD_MANAGER, info=True, role=True, doc="the field manager of server-side apply"),
    _o("takeover_managers", "list", elements="str", info=True, role=True,
       doc="field managers whose fields are taken over (people's tools)"),
    _o("force_conflicts", "bool", True, role=True, doc="take fields over from other field managers"),
    _o("fail_on_shared", "bool", role=True,
       doc="fail when a desired object belongs to another stack (unset: when the stack is confined)"),
    _o("recreate_on_immutable", "bool", False, role=True, doc="delete and recreate on a change of an immutable field"),
    _o("record_namespace", default="kube-system", info=True, role=True,
       doc="namespace of the stack's record, key and Lease"),
    _o("record_namespaces", "list", elements="str", info=True, role=True,
       doc="other namespaces holding stacks' records (only the records of the run's record namespaces count)"),
    _o("commit", info=True, doc="the source commit the record stores"),
    _o("wait", "bool", False, role=True, doc="wait until the stack's objects, written or unchanged, are ready"),
    _o("wait_timeout", "raw", 300, role=True,
       doc="how long to wait for readiness, a recreate and the Lease (seconds, or a duration such as 5m)"),
    _o("wait_condition", "list", elements="dict", engine="wait_conditions", options=WAIT_CONDITION_SPEC,
       doc="readiness rules replacing a kind's built-in one"),
    _o("concurrency", "int", 16, info=True, role=True, doc="API requests in flight at most"),
    _o("full_prune_scan", "bool", False, info=True, doc="list every listable kind when pruning"),
    _o("max_prune", role=True, doc="the prune budget of one run (a number or a percentage)"),
    _o("approved_plan", "raw", role=True, doc="the approved plan the run is held to (a mapping or a file)"),
    _o("source", doc="the source the stack comes from (its record remembers it)"),
    _o("other_sources", "list", elements="dict", doc="what the run's other sources declare (set by sources)"),
    _o("report_unchanged", "bool", False, engine=NOT_ENGINE, doc="applied lists the unchanged objects too"),
    _o("discovery_cache_dir", "path", "~/.kube/cache/stacksync", info=True, engine_default=None, role=True,
       doc="directory of the discovery cache shared between runs (empty: none)"),
    _o("prune_grace", info=True, role=True, doc="how long a removed object stays marked before it is deleted"),
    _o("emit_plan", "bool", False, info=True, role=True, doc="a check returns its plan"),
    _o("plan_file", "path", info=True, engine=NOT_ENGINE, role=True, doc="where a check writes its plan"),
)
BY_NAME = dict((o.name, o) for o in OPTIONS)


def stack_spec():
    """The argument spec of module ``stack``'s own options (without the connection and the confinement)."""
    return dict((o.name, o.spec()) for o in OPTIONS)


def info_spec():
    """The argument spec of ``stack_info``'s own options: the same as ``stack``'s, except that ``resources`` has
    no default (without a desired set, the stack's live objects are reported as they are)."""
    return dict((o.name, o.spec(without_default=o.name == "resources")) for o in OPTIONS if o.info)


def engine_defaults():
    """``{engine name: default}`` of the engine options that come from module parameters."""
    return dict((o.attr, o.default if o.engine_default is MODULE_DEFAULT else o.engine_default)
                for o in OPTIONS if o.engine is not NOT_ENGINE)


def role_variables():
    """``{option: the role's variable}`` of the options role ``stacksync.k8s.sync`` sets."""
    return dict((o.name, o.role) for o in OPTIONS if o.role)
