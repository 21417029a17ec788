# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sandbox the ``*.j2`` templates of a repository render in, unless its source is trusted.

A repository's templates are input, not code: a sandboxed template can compute with what it is given
and nothing else. Built on Jinja2's ``ImmutableSandboxedEnvironment`` (no ``__class__`` /
``__globals__`` / ``mro`` escapes, no mutation of the values it is given) and closed further, as
allow-lists:

* **variables**: only the ones passed in (the source's ``vars``, and ``inventory_hostname``); no
  ``hostvars``, ``vars``, ``groups``, nor any other source's settings or credentials;
* **globals**: ``range`` (at most 100000 items), ``dict``, ``namespace``, ``cycler``, ``joiner``; no
  ``lookup`` / ``query`` / ``q`` (they run on the controller), no ``now``, no ``lipsum``;
* **filters and tests**: :mod:`sandbox_filters` (pure functions; nothing that reads a file, the
  environment, the clock or the network);
* **attributes**: only of the plain values templates work with (strings, numbers, lists, mappings,
  Jinja2's loop / namespace / cycler / joiner / macro objects), never one starting with ``_``;
* **includes, imports, extends**: only files under the source's own directory, named by a relative
  path without ``..`` (symlinks resolved: one leading out is refused);
* **size**: the output stops at ``max_output`` characters; repetition (``*``), powers and widths
  (``%``, ``format``, ``center``, ``indent`` …) that would build a huge value are refused, and so are the methods
  and filters whose arguments make their value large (``'x'.ljust(10**10)``, ``(['x' * 1000] * 1000) | join``,
  ``replace``, ``expandtabs``, ``to_bytes``, ``sum``, ``flatten``, ``regex_replace``), before they build it.

What the checks do not foresee (nested loops, a regular expression that backtracks for ever, a value some other
filter builds) is bounded by the process the templates render in (:mod:`.sandbox_limits`: CPU time and memory).

A template that uses what it may not is refused before it renders when the use is written in it
(``lookup(...)``, ``x.__class__``, an unknown filter, an include of ``/etc/passwd``), else when it is
reached; either way :class:`TemplateFailure` names the line (and the included file) and what was refused.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
from collections.abc import ItemsView, KeysView, ValuesView

from ansible_collections.stacksync.k8s.plugins.plugin_utils import sandbox_filters
from jinja2 import BaseLoader, StrictUndefined, TemplateNotFound, TemplateSyntaxError, nodes, pass_environment, pass_eval_context
from jinja2.environment import TemplateModule
from jinja2.exceptions import SecurityError, TemplateError, UndefinedError
from jinja2.filters import do_replace, make_attrgetter, sync_do_join, sync_do_sum
from jinja2.runtime import BlockReference, LoopContext, Macro, TemplateReference, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Cycler, Joiner, Namespace

#: Variables of the play a sandboxed template gets besides its source's ``vars``.
PLAY_VARIABLES = ("inventory_hostname",)
#: Names that are not available, with why (refused wherever they appear, unless a source's vars define them).
REFUSED_NAMES = dict(
    [(n, "lookups run on the controller (commands, files, the network)") for n in ("lookup", "query", "q")]
    + [(n, "the template of an untrusted source gets only its source's vars and %s" % ", ".join(PLAY_VARIABLES))
       for n in ("hostvars", "vars", "groups", "group_names", "play_hosts", "ansible_play_hosts",
                 "ansible_play_hosts_all", "ansible_play_batch", "ansible_facts", "ansible_env", "environment",
                 "inventory_dir", "inventory_file", "playbook_dir", "role_path", "omit", "now", "undef")]
)
#: Types whose (public) attributes a sandboxed template may read.
SAFE_TYPES = (str, int, float, bool, type(None), dict, list, tuple, KeysView, ValuesView, ItemsView,
              LoopContext, Namespace, Cycler, Joiner, Macro, TemplateReference, BlockReference, TemplateModule,
              Undefined)
#: Largest value (string, list) a template may build when its output is not limited (``max_file_size`` 0).
DEFAULT_VALUE_LIMIT = 64 * 1024 * 1024
#: Largest width, count or exponent a template may ask of an operator or filter.
MAX_WIDTH = 10000
_WIDTH = re.compile(r"%[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?|\{[^{}]*:[^{}]*?(\d+)[^{}]*\}")
TRUST_HINT = "give the source trusted: true if its repository is yours (full Ansible templating)"


class TemplateFailure(Exception):
    """A sandboxed template failed or was refused: ``problem`` says what, ``line`` where (in the template)."""

    def __init__(self, problem, line=None):
        super(TemplateFailure, self).__init__(problem)
        self.problem = problem
        self.line = line


class Refused(SecurityError):
    """Something the sandbox does not allow; ``filename`` / ``lineno`` where it is written, when known."""

    def __init__(self, message, filename=None, lineno=None):
        super(Refused, self).__init__(message)
        self.filename = filename
        self.lineno = lineno


class SandboxEnvironment(ImmutableSandboxedEnvironment):
    """The environment of one template: its loader confined to ``directory``, the allow-lists above."""

    intercepted_binops = frozenset(("*", "**", "%", "+"))

    def __init__(self, searchpath, directory, max_output):
        super(SandboxEnvironment, self).__init__(
            undefined=StrictUndefined, trim_blocks=True, autoescape=False,
            extensions=["jinja2.ext.loopcontrols"], finalize=_finalize,
            loader=ConfinedLoader(searchpath, directory, max_output))
        self.max_output = max_output or DEFAULT_VALUE_LIMIT  # the largest value it may build, too
        self.filters = _bounded_filters(sandbox_filters.allowed_filters())
        self.tests = sandbox_filters.allowed_tests()
        self.globals = {"range": self.globals["range"], "dict": dict, "cycler": Cycler, "joiner": Joiner,
                        "namespace": _bounded_namespace(self.max_output)}

    def is_safe_attribute(self, obj, attr, value):
        return isinstance(obj, SAFE_TYPES) and super(SandboxEnvironment, self).is_safe_attribute(obj, attr, value)

    def getattr(self, obj, attribute):
        if not isinstance(obj, SAFE_TYPES):  # a function, a type...: not even whether it has the attribute
            self.unsafe_undefined(obj, attribute)
        return super(SandboxEnvironment, self).getattr(obj, attribute)

    def getitem(self, obj, argument):
        if not isinstance(obj, SAFE_TYPES):
            self.unsafe_undefined(obj, argument)
        return super(SandboxEnvironment, self).getitem(obj, argument)

    def unsafe_undefined(self, obj, attribute):
        raise Refused("attribute %r of a value of type %s is not available in the sandbox (only public attributes "
                      "of plain values are)" % (attribute, type(obj).__name__))

    def wrap_str_format(self, value):
        wrapped = super(SandboxEnvironment, self).wrap_str_format(value)
        if wrapped is not None:
            _check_widths(getattr(value, "__self__", ""))
        return wrapped

    def call(__self, __context, __obj, *args, **kwargs):  # pylint: disable=no-self-argument
        # what a method of a plain value would build is bounded before it is built (str.ljust(10**10), ...)
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, (str, bytes)) and getattr(__obj, "__name__", None) == "join" and args:
            items = list(args[0])
            _over(_joined_size(items, owner), __self.max_output, "join()")
            args = (items, *args[1:])
        else:
            size = _call_size(__obj, args, kwargs)
            if size is not None:
                _over(size, __self.max_output, "%s()" % __obj.__name__)
        return super(SandboxEnvironment, __self).call(__context, __obj, *args, **kwargs)

    def call_binop(self, context, operator, left, right):
        if operator == "*" and isinstance(right, (str, list, tuple)):
            left, right = right, left
        if operator == "*" and isinstance(left, (str, list, tuple)) and isinstance(right, int):
            if len(left) * right > self.max_output:
                raise Refused("%r * %d would be larger than the template's output may be" % (left[:20], right))
        elif operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
            if len(left) + len(right) > self.max_output:
                raise Refused("a value larger than the template's output may be")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int):
            if abs(left) > 1 and right > 0 and abs(left).bit_length() * right > 4096:
                raise Refused("%d ** %d is too large a number" % (left, right))
        elif operator == "%" and isinstance(left, str):
            _check_widths(left)
        return super(SandboxEnvironment, self).call_binop(context, operator, left, right)


def _finalize(value):
    """What ``{{ value }}`` prints: as Ansible prints it (``None`` prints nothing)."""
    return "" if value is None else value


def _check_widths(text):
    for match in _WIDTH.finditer(text if isinstance(text, str) else ""):
        for number in match.groups():
            if number == "*" or (number and int(number) > MAX_WIDTH):
                raise Refused("the format %r asks for a width over %d" % (match.group(0), MAX_WIDTH))


def _over(size, limit, what):
    if size > limit:
        raise Refused("%s would build a value larger than the template's output may be (%d characters)" % (what, limit))


#: methods of strings whose first argument is the length of what they build
_WIDTH_METHODS = frozenset(("ljust", "rjust", "center", "zfill"))


def _call_size(method, args, kwargs):
    """The size of what calling ``method`` (of a plain value) with ``args`` builds, for the methods whose arguments
    make it large (a width, a tab size, a replacement, a byte count); else None."""
    owner, name = getattr(method, "__self__", None), getattr(method, "__name__", None)
    if isinstance(owner, (str, bytes)):
        if name in _WIDTH_METHODS:
            width = args[0] if args else kwargs.get("width")
            return width if isinstance(width, int) else None
        if name == "expandtabs":
            tabsize = args[0] if args else kwargs.get("tabsize", 8)
            tab = "\t" if isinstance(owner, str) else b"\t"
            return len(owner) + owner.count(tab) * tabsize if isinstance(tabsize, int) else None
        if name == "replace" and len(args) >= 2 and all(isinstance(a, type(owner)) for a in args[:2]):
            return _replaced_size(owner, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count", -1))
    if isinstance(owner, int) and not isinstance(owner, bool) and name == "to_bytes":
        length = args[0] if args else kwargs.get("length", 1)
        return length if isinstance(length, int) else None
    return None


def _joined_size(items, separator):
    """The length of ``items`` joined with ``separator``, without building it (an item as it is joined: itself if it
    is a string, else its ``str()``)."""
    return (sum(len(x) if isinstance(x, (str, bytes)) else len(str(x)) for x in items)
            + len(separator) * max(len(items) - 1, 0))


def _replaced_size(text, old, new, count=-1):
    """The length of ``text.replace(old, new, count)``, without building it."""
    times = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        times = min(times, count)
    return len(text) + times * max(len(new) - len(old), 0)


def _bounded_namespace(max_output):
    class BoundedNamespace(Namespace):
        """``namespace()``: a value stored in it is bounded like the template's output."""

        def __setitem__(self, name, value):
            if isinstance(value, (str, list, tuple, dict)) and len(value) > max_output:
                raise Refused("a value larger than the template's output may be")
            super(BoundedNamespace, self).__setitem__(name, value)

    return BoundedNamespace


#: Filters whose numeric arguments make their result that large: ``name -> positions of those arguments``
_WIDTH_ARGS = {"center": (1,), "indent": (1,), "wordwrap": (1,), "batch": (1,), "slice": (1,), "truncate": ()}


#: the largest indentation the serialising filters may use (a deep value repeats it on every line)
MAX_INDENT = 64


def _bounded_filters(filters):
    for name, positions in _WIDTH_ARGS.items():
        filters[name] = _bounded(filters[name], positions)
    filters["format"] = _bounded_format(filters["format"])
    filters.update(join=_bounded_join, replace=_bounded_replace, indent=_bounded_indent(filters["indent"]), sum=_bounded_sum,
                   flatten=_bounded_flatten(filters["flatten"]), regex_replace=_bounded_regex_replace(filters["regex_replace"]))
    for name in ("to_json", "to_nice_json", "to_yaml", "to_nice_yaml"):
        filters[name] = _bounded_indent_option(filters[name], name.startswith("to_nice"))
    for name in list(filters):  # the same under ansible.builtin.<name>
        if name.startswith("ansible.builtin.") and name[len("ansible.builtin."):] in filters:
            filters[name] = filters[name[len("ansible.builtin."):]]
    return filters


@pass_eval_context
def _bounded_join(eval_ctx, value, d="", attribute=None):
    items = list(value)
    if attribute is not None:
        items = [make_attrgetter(eval_ctx.environment, attribute)(item) for item in items]
    _over(_joined_size(items, str(d)), eval_ctx.environment.max_output, "join")
    return sync_do_join(eval_ctx, items, d)


@pass_eval_context
def _bounded_replace(eval_ctx, s, old, new, count=None):
    _over(_replaced_size(str(s), str(old), str(new), -1 if count is None else count), eval_ctx.environment.max_output,
          "replace")
    return do_replace(eval_ctx, s, old, new, count)


def _bounded_indent(function):
    @pass_environment
    def bounded(environment, s, width=4, first=False, blank=False):
        lines = str(s).count("\n") + 1
        _over(len(str(s)) + lines * (width if isinstance(width, int) else len(str(width))), environment.max_output,
              "indent")
        return function(s, width, first, blank)
    return bounded


@pass_environment
def _bounded_sum(environment, iterable, attribute=None, start=0):
    items = list(iterable)
    if attribute is not None:
        items = [make_attrgetter(environment, attribute)(item) for item in items]
    if isinstance(start, (list, tuple, str)):  # concatenation
        _over(len(start) + sum(len(x) for x in items if isinstance(x, (list, tuple, str))), environment.max_output, "sum")
    return sync_do_sum(environment, items, start=start)


def _bounded_flatten(function):
    @pass_environment
    def bounded(environment, value, levels=None, skip_nulls=True):
        limit = environment.max_output
        _over(_leaves(value, None if levels is None else int(levels), limit), limit, "flatten")
        return function(value, levels, skip_nulls)
    return bounded


def _leaves(value, levels, limit):
    """How many items flattening ``value`` gives (counting stops past ``limit``)."""
    count = 0
    for element in value:
        if isinstance(element, (list, tuple)) and (levels is None or levels >= 1):
            count += _leaves(element, None if levels is None else levels - 1, limit - count)
        else:
            count += 1
        if count > limit:
            break
    return count


def _bounded_regex_replace(function):
    @pass_environment
    def bounded(environment, value="", pattern="", replacement="", ignorecase=False, multiline=False, count=0,
                mandatory_count=0):
        text = str(value)
        flags = (re.I if ignorecase else 0) | (re.M if multiline else 0)
        times = 0
        for times, _match in enumerate(re.finditer(pattern, text, flags), 1):
            if count and times >= count:
                break
        # a group reference is at most its match, and the matches together at most the text
        refs = len(re.findall(r"\\(?:\d|g<)", str(replacement)))
        _over(len(text) + times * len(str(replacement)) + refs * len(text), environment.max_output, "regex_replace")
        return function(value, pattern, replacement, ignorecase, multiline, count, mandatory_count)
    return bounded


def _bounded_indent_option(function, indent_first):
    def bounded(value, *args, **kwargs):
        indent = kwargs.get("indent", args[0] if args and indent_first else None)
        if isinstance(indent, int) and not isinstance(indent, bool) and indent > MAX_INDENT:
            raise Refused("an indentation over %d" % MAX_INDENT)
        return function(value, *args, **kwargs)
    return bounded


def _bounded(function, positions):
    def bounded(*args, **kwargs):
        values = [args[p] for p in positions if p < len(args)] + list(kwargs.values())
        if any(isinstance(v, int) and not isinstance(v, bool) and v > MAX_WIDTH for v in values):
            raise Refused("a width or count over %d" % MAX_WIDTH)
        return function(*args, **kwargs)

    for attr in ("jinja_pass_arg",):  # pass_environment / pass_eval_context markers
        if hasattr(function, attr):
            setattr(bounded, attr, getattr(function, attr))
    return bounded


def _bounded_format(function):
    def bounded(value, *args, **kwargs):
        _check_widths(value)
        return function(value, *args, **kwargs)

    return bounded


class ConfinedLoader(BaseLoader):
    """Loads included, imported and extended templates from ``searchpath`` (directories under
    ``directory``), refusing absolute names, ``..`` and whatever resolves outside ``directory``; each
    template is checked (:func:`check_template`) before it is compiled."""

    def __init__(self, searchpath, directory, max_size):
        self.searchpath = searchpath
        self.directory = os.path.realpath(directory)
        self.max_size = max_size

    def get_source(self, environment, template):
        name = template
        problem = confinement_problem(name)
        if problem:
            raise Refused(problem)
        for base in self.searchpath:
            path = os.path.join(base, *name.split("/"))
            if not os.path.isfile(path):
                continue
            real = os.path.realpath(path)
            if not _within(real, self.directory):
                raise Refused("%r resolves outside the source's directory (a symbolic link?): a sandboxed template "
                              "includes only files under it" % name)
            if _in_git_dir(os.path.relpath(real, self.directory).split(os.sep)):
                raise Refused("%r resolves into a .git directory (a symbolic link?): a sandboxed template does not "
                              "include it" % name)
            if self.max_size and os.path.getsize(real) > self.max_size:
                raise Refused("%r is over the %d byte limit (max_file_size)" % (name, self.max_size))
            with open(real, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            return text, path, lambda: True
        raise TemplateNotFound(name)

    def load(self, environment, name, globals=None):
        source, filename, uptodate = self.get_source(environment, name)
        tree = environment.parse(source, name, filename)
        check_template(tree, filename)
        code = environment.compile(tree, name, filename)
        return environment.template_class.from_code(environment, code, environment.make_globals(globals), uptodate)


def confinement_problem(name):
    """Why a sandboxed template may not include / import / extend ``name``, else ``None``."""
    if not isinstance(name, str) or not name:
        return "a template name must be a non-empty string"
    if name.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", name) or "\\" in name or "\x00" in name:
        return ("%r is an absolute path: a sandboxed template includes only files under its source's directory, "
                "by a relative path" % name)
    if ".." in name.split("/"):
        return "%r leaves the source's directory ('..'): a sandboxed template includes only files under it" % name
    if _in_git_dir(name.split("/")):
        return "%r is in a .git directory (git's own files, the checkout's): a sandboxed template does not include it" % name
    return None


def _in_git_dir(parts):
    return any(part.lower() == ".git" for part in parts)


def _within(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


_FILTER_NAMES = frozenset(sandbox_filters.allowed_filters())
_TEST_NAMES = frozenset(sandbox_filters.allowed_tests())
_TEMPLATE_NODES = (nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)


def check_template(tree, filename, variables=frozenset()):
    """Refuse (:class:`Refused`, with its line) what the parsed template ``tree`` writes that the sandbox
    does not allow: a refused name (:data:`REFUSED_NAMES`) it does not define itself and ``variables``
    does not hold, a ``__dunder__`` attribute, a filter or test outside the allow-list, a constant
    template name that :func:`confinement_problem` refuses."""
    from jinja2 import meta  # pylint: disable=import-outside-toplevel

    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Filter, nodes.Test, *_TEMPLATE_NODES)):
        problem = _node_problem(node, ())
        if problem:
            raise Refused(problem, filename, node.lineno)
    # only now: finding the undeclared names compiles the template, which fails on an unknown filter
    refused = (meta.find_undeclared_variables(tree) & set(REFUSED_NAMES)) - set(variables)
    for node in tree.find_all(nodes.Name):
        problem = _node_problem(node, refused)
        if problem:
            raise Refused(problem, filename, node.lineno)


def _node_problem(node, refused):
    if isinstance(node, nodes.Name):
        if node.ctx == "load" and node.name in refused:
            return "%r is not available in the sandbox: %s" % (node.name, REFUSED_NAMES[node.name])
    elif isinstance(node, nodes.Getattr):
        if node.attr.startswith("__"):
            return "attribute %r is not available in the sandbox (only public attributes of plain values are)" % node.attr
    elif isinstance(node, nodes.Getitem):
        if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str) and node.arg.value.startswith("__"):
            return "attribute %r is not available in the sandbox (only public attributes of plain values are)" % (
                node.arg.value)
    elif isinstance(node, nodes.Filter):
        if node.name not in _FILTER_NAMES:
            return "filter %r is not available in the sandbox (its filters are listed in docs/security.md)" % node.name
    elif isinstance(node, nodes.Test):
        if node.name not in _TEST_NAMES:
            return "test %r is not available in the sandbox (its tests are listed in docs/security.md)" % node.name
    else:
        names = node.template.items if isinstance(node.template, (nodes.List, nodes.Tuple)) else [node.template]
        for name in names:
            if isinstance(name, nodes.Const):
                problem = confinement_problem(name.value)
                if problem:
                    return problem
    return None


def render_template(text, path, directory, variables, max_output):
    """The text the template ``text`` (of the file ``path``, under the source's ``directory``) renders to in
    the sandbox, with ``variables`` (plain values) only; its output at most ``max_output`` characters.

    Raises :class:`TemplateFailure` (``template refused: …`` or ``template error: …``, with the line)."""
    directory = os.path.realpath(directory)
    searchpath = [os.path.dirname(path)] + ([directory] if directory != os.path.dirname(path) else [])
    env = SandboxEnvironment(searchpath, directory, max_output)
    name = os.path.basename(path)
    try:
        tree = env.parse(text, name, path)
        check_template(tree, path, variables)
        template = env.template_class.from_code(env, env.compile(tree, name, path), env.make_globals(None))
        return _with_trailing_newlines(_output(template.generate(variables), max_output), text)
    except MemoryError:
        raise  # its caller knows the limit it hit (sandbox_limits)
    except Exception as exc:  # pylint: disable=broad-except  # every other failure becomes a TemplateFailure
        raise _failure(exc, path, directory) from None


def _with_trailing_newlines(out, text):
    """``out`` ending with as many line breaks as the template's ``text`` (Jinja2 drops the last one of each
    template; Ansible gives them back to the template it renders, not to what it includes)."""
    missing = (len(text) - len(text.rstrip("\n"))) - (len(out) - len(out.rstrip("\n")))
    return out + "\n" * missing if missing > 0 else out


def _output(chunks, max_output):
    out, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if max_output and size > max_output:
            raise Refused("the template's output is over the %d character limit (max_file_size)" % max_output)
        out.append(chunk)
    return "".join(out)


def _template_frames(exc, path):
    """``(line in the file, (file, line) of the innermost template frame)`` from the traceback Jinja2 rewrote."""
    top, inner = None, None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == path:
            top = tb.tb_lineno
        if filename == path or (os.path.isabs(filename) and not filename.endswith(".py")):
            inner = (filename, tb.tb_lineno)
        tb = tb.tb_next
    return top, inner


def _failure(exc, path, directory):
    top, inner = _template_frames(exc, path)
    if isinstance(exc, (Refused, TemplateSyntaxError)) and getattr(exc, "lineno", None):
        where = (getattr(exc, "filename", None) or path, exc.lineno)
        inner = where if where[0] != path or inner is None else inner
        if where[0] == path:
            top = exc.lineno
    hint = ""
    if isinstance(exc, Refused):
        problem, hint = "template refused: %s" % (exc.message or str(exc)), "; " + TRUST_HINT
    elif isinstance(exc, UndefinedError) and re.match(r"^'[^']*' is undefined$", exc.message or ""):
        problem = "template error: %s (a sandboxed template gets only its source's vars and %s)" % (
            exc.message, ", ".join(PLAY_VARIABLES))
    elif isinstance(exc, RecursionError):
        problem = "template error: too deep a recursion (an include or a macro that calls itself?)"
    elif isinstance(exc, TemplateError):
        problem = "template error: %s" % (exc.message or type(exc).__name__)
    else:
        problem = "template error: %s" % (str(exc) or type(exc).__name__)
    if inner is not None and inner[0] != path:
        problem += " (in the included file %s, line %d)" % (
            os.path.relpath(os.path.realpath(inner[0]), directory).replace(os.sep, "/"), inner[1])
    return TemplateFailure(problem + hint, top)


def plain_variables(value, depth=0):
    """``value`` as plain Python values (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``):
    what a sandboxed template is given, whatever Ansible wrapped it in (unsafe text, tagged values)."""
    if depth > 100:
        raise ValueError("the template variables are nested more than 100 levels deep")
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return "".join([value])  # an exact str (str() of ansible-core 2.16's unsafe text is itself)
    if isinstance(value, dict) or hasattr(value, "items"):
        return dict(("".join([str(k)]), plain_variables(v, depth + 1)) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain_variables(v, depth + 1) for v in value]
    return "".join([str(value)])
