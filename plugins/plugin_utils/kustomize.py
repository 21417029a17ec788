# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a kustomization may reach, checked before kustomize runs.

kustomize confines the plain files a kustomization loads to its own directory (its default load
restrictor, ``LoadRestrictionsRootOnly``), but the directories it lists (``resources``, ``bases``,
``components``) may be anywhere, and it fetches from the network whatever is written as a URL: git
repositories (``github.com/org/repo//path?ref=v1``, ``https://…``, ``git@…``, ``ssh://…``), files over
HTTP (``resources``, generator ``files`` / ``envs``, ``patches``, ``openapi`` …) and Helm charts.

:func:`check_tree` reads the kustomization files of a tree (the kustomization and every local one it
refers to, recursively) and refuses, naming the kustomization file and the reference:

* every reference to something outside the checkout (``../../..``, an absolute path, a symlink out);
* unless remote references are allowed, every remote one (the default is that of Flux's
  ``--no-remote-bases``: a repository's kustomizations build from the repository alone).

Pure file reading, no kustomize; errors are :class:`KustomizationRefused`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import os
import re
import selectors
import subprocess
import time
from urllib.parse import parse_qsl, unquote

try:
    import resource
except ImportError:  # pragma: no cover - not on this platform: kustomize's memory is not bounded
    resource = None

import yaml
from ansible_collections.stacksync.k8s.plugins.plugin_utils.kubeyaml import MAX_FLOW_DEPTH, too_deep

#: A directory holding one of these is a kustomization.
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

#: How kustomize recognises a remote reference (sigs.k8s.io/kustomize api/internal/git/repospec.go, and
#: the loader's HTTP files): a URL scheme, go-getter's ``git::``, ``gh:``, scp-like ``user@host:``,
#: github.com without a scheme, Azure DevOps' ``_git/``.
#: ``user@host:path`` and ``user@host/path`` both (any ``@`` before the first ``/``: kustomize takes what precedes it
#: for a user name).
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git::|gh:|[^/\s]*@[^/\s]*?[:/]|github\.com[:/])|_git/", re.IGNORECASE)
#: what a reference kustomize could parse as a repository holds (one the checks above missed, refused when it is
#: not a path in the checkout)
_URL_LIKE = re.compile(r"@|://|::|\?|^[a-z]+:", re.IGNORECASE)
#: a URL kustomize would give git or read as a local file: never, whatever ``kustomize_remote`` says (the
#: controller's files, other sources' checkouts)
_LOCAL_URL = re.compile(r"^(?:git::)?file:", re.IGNORECASE)

#: Fields whose entries are kustomizations (directories, built in turn) or files: ``field -> kind``
_LIST_FIELDS = {
    "resources": "base", "bases": "base", "components": "base",
    "generators": "base", "transformers": "base", "validators": "base",
    "crds": "file", "configurations": "file", "patchesStrategicMerge": "file",
}
#: Fields whose entries are mappings with a ``path`` (a file)
_PATH_FIELDS = ("patches", "patchesJson6902", "replacements")
_GENERATORS = ("configMapGenerator", "secretGenerator")


class KustomizationRefused(ValueError):
    """A kustomization refers to something it may not: ``args[0]`` is the message."""


def is_remote(reference):
    """True if kustomize would fetch ``reference`` from the network (a git repository or an HTTP file)."""
    return bool(_REMOTE.search(reference.strip()))


def remote_problem(reference):
    """Why a remote ``reference`` is refused even where remote references are allowed, else None: a ``file:`` URL
    (the controller's own files), or a query value (``?ref=``, ``?version=`` ...) kustomize would hand git as an option
    (``--upload-pack=<command>``)."""
    text = reference.strip()
    if _LOCAL_URL.search(text):
        return "it names the controller's own files"
    query = text.split("?", 1)[1] if "?" in text else ""
    for _name, value in parse_qsl(query, keep_blank_values=True):
        previous = None
        while value != previous:  # however often it was percent-encoded
            previous, value = value, unquote(value)
        if value.lstrip().startswith("-"):
            return "its query value %r would be read by git as an option" % value[:40]
    return None


def find_kustomization(names):
    """The kustomization file among a directory's ``names`` (kustomize's order), else ``None``."""
    for candidate in KUSTOMIZATION_FILES:
        if candidate in names:
            return candidate
    return None


#: Fields whose entries are plugin configurations (files, or YAML written in place), or kustomizations
_PLUGIN_FIELDS = ("generators", "transformers", "validators")
#: Fields whose entries may be YAML written in place (an inline patch, generator or transformer config), not a path
_INLINE_FIELDS = ("patchesStrategicMerge", *_PLUGIN_FIELDS)


def _inline(field, entry):
    """True for an entry of ``field`` that is YAML written in place (lines of it), not a path: only where kustomize
    reads one. A one-line entry is checked as a path (``[x]/../..`` is one; a flow mapping names nothing that exists)."""
    return field in _INLINE_FIELDS and "\n" in entry.strip()


def _get(mapping, name):
    """Every value of ``mapping`` under a key that is ``name`` to kustomize: it decodes a kustomization as Go's
    encoding/json does, which matches field names without regard to case (Unicode case folding included:
    ``Resources``, ``RESOURCES`` and ``re\\u017fources`` (a long s) are ``resources``). ``[]`` if none."""
    if not isinstance(mapping, dict):
        return []
    folded = name.casefold()
    return [v for k, v in mapping.items() if isinstance(k, str) and k.casefold() == folded]


def _strings(values):
    """The strings among ``values`` (a field's values, each a string or a list)."""
    out = []
    for value in values:
        out.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str))
    return out


def _items(mapping, name):
    """The entries of the list field(s) ``name`` of ``mapping`` (:func:`_get`)."""
    return [entry for value in _get(mapping, name) for entry in _entries(value)]


def _generator_files(generator):
    """The files a ``configMapGenerator`` / ``secretGenerator`` entry reads: ``files`` (``key=path`` or
    ``path``), ``envs``, the deprecated ``env``."""
    files = [entry.split("=", 1)[1] if "=" in entry else entry for entry in _strings(_get(generator, "files"))]
    return files + _strings(_get(generator, "envs")) + _strings(_get(generator, "env"))


def references(data):
    """``(field, reference, kind)`` for every path or URL a kustomization's ``data`` names; ``kind`` is
    ``"base"`` (a kustomization directory or a file), ``"file"`` or ``"remote"`` (always the network). Field names
    are matched as kustomize matches them (:func:`_get`)."""
    refs = []
    for field, kind in _LIST_FIELDS.items():
        for entry in _items(data, field):
            if isinstance(entry, str) and entry.strip() and not _inline(field, entry):
                refs.append((field, entry.strip(), kind))
    for field in _PATH_FIELDS:
        for entry in _items(data, field):
            refs.extend((field, path, "file") for path in _strings(_get(entry, "path")))
    for openapi in _get(data, "openapi"):
        refs.extend(("openapi", path, "file") for path in _strings(_get(openapi, "path")))
    for field in _GENERATORS:
        for entry in _items(data, field):
            refs.extend((field, path, "file") for path in _generator_files(entry))
    for entry in _items(data, "helmCharts"):
        refs.extend(("helmCharts", repo, "remote") for repo in _strings(_get(entry, "repo")) if repo)
        refs.extend(("helmCharts", path, "file") for name in ("valuesFile", "additionalValuesFiles")
                    for path in _strings(_get(entry, name)))
    for entry in _items(data, "helmChartInflationGenerator"):
        refs.extend(("helmChartInflationGenerator", url, "remote") for url in _strings(_get(entry, "chartRepoUrl")) if url)
        refs.extend(("helmChartInflationGenerator", path, "file") for path in _strings(_get(entry, "valuesLocal")))
    for helm_globals in _get(data, "helmGlobals"):
        refs.extend(("helmGlobals.chartHome", path, "file") for path in _strings(_get(helm_globals, "chartHome")))
    return refs


def _entries(value):
    return value if isinstance(value, list) else []


def _within(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # pylint: disable=too-many-ancestors
    """A safe loader that refuses a key written twice in a mapping (kustomize reads one of them; which, is not ours
    to guess)."""

    def construct_mapping(self, node, deep=False):
        keys = set()
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float, bool)) and key in keys:
                raise yaml.constructor.ConstructorError(None, None, "the key %r is written twice" % (key,),
                                                        key_node.start_mark)
            keys.add(key)
        return super(_UniqueKeyLoader, self).construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _UniqueKeyLoader.construct_mapping)


def _documents(path, shown, max_size=None):
    """The YAML documents of the kustomization or plugin configuration file ``path`` (none empty). What cannot be
    checked is refused (:class:`KustomizationRefused`): a file that cannot be read, is over ``max_size`` bytes, is
    not YAML, nests deeper than libyaml can compose, writes a key twice, or holds a value kustomize reads as a string
    and this check would not (``!!binary``, ``!!set``)."""
    try:
        if max_size and os.path.getsize(path) > max_size:
            raise KustomizationRefused("%s: is over the %d byte limit (max_file_size): refused" % (shown, max_size))
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except OSError as exc:
        raise KustomizationRefused("%s: cannot be read (%s): refused" % (shown, exc.strerror)) from None
    except UnicodeDecodeError as exc:
        raise KustomizationRefused("%s: is not YAML that can be checked (%s): refused" % (shown, exc)) from None
    return _parsed(text, shown)


def _parsed(text, shown):
    """The YAML documents of ``text`` (a file's, or an inline entry's), none empty; refused as :func:`_documents`
    says."""
    if too_deep(text):
        raise KustomizationRefused("%s: nests flow collections more than %d levels deep: refused" % (shown, MAX_FLOW_DEPTH))
    try:
        documents = [d for d in yaml.load_all(text, Loader=_UniqueKeyLoader) if d is not None]
    except (yaml.YAMLError, RecursionError) as exc:
        raise KustomizationRefused("%s: is not YAML that can be checked (%s): refused"
                                   % (shown, " ".join(str(exc).split())[:200] or type(exc).__name__)) from None
    if any(_not_text(d) for d in documents):
        raise KustomizationRefused("%s: holds a binary or set value (!!binary, !!set) that kustomize reads as a string: "
                                   "refused" % shown)
    return documents


def _not_text(value):
    """True if ``value`` holds bytes or a set (a key or a value), anywhere."""
    if isinstance(value, (bytes, bytearray, set, frozenset)):
        return True
    if isinstance(value, dict):
        return any(_not_text(k) or _not_text(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_not_text(v) for v in value)
    return False


def _load(path, shown, max_size=None):
    """A kustomization file's mapping (:func:`_documents`: else refused); more than one document, or anything but a
    mapping, is refused too."""
    documents = _documents(path, shown, max_size)
    if len(documents) > 1:
        raise KustomizationRefused("%s: holds %d YAML documents: a kustomization is one; refused" % (shown, len(documents)))
    if not documents or not isinstance(documents[0], dict):
        raise KustomizationRefused("%s: is not a mapping of kustomization fields: refused" % shown)
    return documents[0]


def _in_git_dir(real, root):
    """True if ``real`` (under ``root``) is in the checkout's ``.git`` directory (or any ``.git`` below it)."""
    return ".git" in os.path.relpath(real, root).split(os.sep)


#: keys of a builtin generator's or transformer's configuration (a file listed in ``generators`` / ``transformers`` /
#: ``validators``, or written inline) whose values are files kustomize reads, or (``repo``, ``chartRepoUrl``) remote
_PLUGIN_FILE_KEYS = frozenset(k.casefold() for k in ("files", "envs", "env", "path", "paths", "valuesFile",
                                                     "additionalValuesFiles", "chartHome", "valuesLocal"))
_PLUGIN_REMOTE_KEYS = frozenset(k.casefold() for k in ("repo", "chartRepoUrl"))


def plugin_references(config, field):
    """``(field, reference, kind)`` for every file or URL a plugin configuration ``config`` (one YAML document) names,
    at any depth (keys matched as kustomize matches them)."""
    refs = []
    if isinstance(config, dict):
        for key, value in config.items():
            name = key.casefold() if isinstance(key, str) else None
            if name in _PLUGIN_FILE_KEYS:
                refs.extend((field, s.split("=", 1)[1] if name == "files" and "=" in s else s, "file")
                            for s in _strings([value]))
            elif name in _PLUGIN_REMOTE_KEYS:
                refs.extend((field, s, "remote") for s in _strings([value]) if s)
            else:
                refs.extend(plugin_references(value, field))
    elif isinstance(config, list):
        for item in config:
            refs.extend(plugin_references(item, field))
    return refs


def _plugin_configs(kdir, root, data, shown, max_size):
    """``(field, reference, kind)`` of what the plugin configurations of a kustomization's ``data`` name: the inline
    ones and the files its ``generators`` / ``transformers`` / ``validators`` list (a directory is a kustomization,
    checked as one)."""
    refs = []
    for field in _PLUGIN_FIELDS:
        for entry in _items(data, field):
            if not isinstance(entry, str) or not entry.strip():
                continue
            if _inline(field, entry):
                documents = _parsed(entry, "%s: an inline %s entry" % (shown, field))
            else:
                path = os.path.realpath(os.path.normpath(os.path.join(kdir, entry.strip())))
                if not (_within(path, root) and os.path.isfile(path)):
                    continue  # outside: refused as a reference; a directory: a kustomization; missing: kustomize says so
                documents = _documents(path, os.path.relpath(path, root).replace(os.sep, "/"), max_size)
            for document in documents:
                refs.extend(plugin_references(document, field))
    return refs


def check_tree(kdir, root, allow_remote=False, visited=None, max_size=None):
    """Refuse the kustomization in ``kdir`` (recursively: the local kustomizations it refers to) if it
    names something outside ``root`` (both real absolute paths) or, unless ``allow_remote``, something
    remote. Raises :class:`KustomizationRefused`; references to nothing are left to kustomize."""
    visited = set() if visited is None else visited
    if kdir in visited:
        return
    visited.add(kdir)
    try:
        kfile = find_kustomization(set(os.listdir(kdir)))
    except OSError:
        return
    if kfile is None:
        return
    shown = os.path.relpath(os.path.join(kdir, kfile), root).replace(os.sep, "/")
    if not _within(os.path.realpath(os.path.join(kdir, kfile)), root):
        raise KustomizationRefused("%s resolves outside the checkout (a symbolic link): refused" % shown)
    data = _load(os.path.join(kdir, kfile), shown, max_size)
    for field, ref, kind in references(data) + _plugin_configs(kdir, root, data, shown, max_size):
        if kind == "remote" or is_remote(ref) or _LOCAL_URL.search(ref.strip()):
            problem = remote_problem(ref)
            if allow_remote and problem is None:
                continue
            raise KustomizationRefused(
                "%s: %s %r is a remote reference (kustomize would fetch it from the network): refused; a "
                "source's kustomizations build from its repository alone unless it sets kustomize_remote: true"
                % (shown, field, ref) if problem is None else "%s: %s %r: %s: refused" % (shown, field, ref, problem))
        # as kustomize reads it: the path cleaned as text first (``missing/../..`` is ``..``), then its links
        target = os.path.normpath(os.path.join(kdir, ref))
        real = os.path.realpath(target)
        if not (_within(target, root) and _within(real, root)):
            raise KustomizationRefused("%s: %s %r resolves outside the checkout: refused" % (shown, field, ref))
        if _in_git_dir(target, root) or _in_git_dir(real, root):
            raise KustomizationRefused("%s: %s %r is in the checkout's .git directory: refused" % (shown, field, ref))
        if not os.path.lexists(target):
            if kind == "base" and not allow_remote and _URL_LIKE.search(ref):  # kustomize may try it as a repository
                raise KustomizationRefused(
                    "%s: %s %r is not in the checkout (kustomize would try to fetch it as a remote repository): "
                    "refused" % (shown, field, ref))
            continue  # a missing file: kustomize says so
        if kind == "base" and os.path.isdir(real):
            check_tree(real, root, allow_remote, visited, max_size)


class OutputTooLarge(Exception):
    """kustomize wrote more than the limit to its standard output (it was stopped)."""


class OutOfMemory(Exception):
    """kustomize needed more memory than its bound (it stopped: the Go runtime's "out of memory")."""


#: the transports the git that kustomize runs may use (``GIT_ALLOW_PROTOCOL``): no ``file`` (the controller's own
#: repositories), no ``ext`` (a command)
GIT_PROTOCOLS = "https:http:ssh:git"
#: those of a source that does not get the controller's identity: no ``ssh`` (it fetches with keys only)
ANONYMOUS_GIT_PROTOCOLS = "https:http:git"
#: what kustomize (and the git it runs) keeps of the controller's environment for a source that does not get the
#: controller's identity: the command path, the locale, the time zone, the temporary directory, the proxies and the
#: certificate authorities (how the controller reaches the network), nothing else (no ``HOME``, ssh agent, git
#: configuration, credential helpers, ``.netrc``, ``KUBECONFIG``, cloud credentials)
ANONYMOUS_KEEP = re.compile(r"^(PATH|LANG|LANGUAGE|LC_[A-Z_]+|TZ|TMPDIR|(HTTPS?|ALL|NO)_PROXY|(https?|all|no)_proxy|"
                            r"SSL_CERT_(FILE|DIR)|GIT_SSL_CA(INFO|PATH))$")


def kustomize_environment(environ=None, home=None):
    """The environment kustomize runs in, its git confined to :data:`GIT_PROTOCOLS` and never prompting.

    With ``home`` (an empty directory: a source that does not get the controller's identity, ``trusted`` false),
    only :data:`ANONYMOUS_KEEP` of the controller's environment, ``HOME`` there and no git configuration but
    git's defaults: a remote base is fetched anonymously (:data:`ANONYMOUS_GIT_PROTOCOLS`), never with the
    controller's ssh keys, agent, credential helpers or ``.netrc`` (which may reach other tenants' repositories).
    Without ``home``: the controller's environment without the connection's credentials (``K8S_AUTH_*``)."""
    environ = os.environ if environ is None else environ
    if home is None:
        env = dict((k, v) for k, v in environ.items() if not k.startswith("K8S_AUTH_"))
        env.update(GIT_ALLOW_PROTOCOL=GIT_PROTOCOLS, GIT_TERMINAL_PROMPT="0")
        return env
    env = dict((k, v) for k, v in environ.items() if ANONYMOUS_KEEP.match(k))
    env.update(HOME=home, XDG_CONFIG_HOME=home, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_ALLOW_PROTOCOL=ANONYMOUS_GIT_PROTOCOLS, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="")
    return env


def _bound_memory(pid, memory):
    """Bound the data memory (the heap: ``RLIMIT_DATA``, which Go's allocations count against) of process ``pid``
    to ``memory`` bytes, where the platform can (Linux's ``prlimit``); set right after it starts, before it has
    read anything."""
    if memory and resource is not None and hasattr(resource, "prlimit"):
        with contextlib.suppress(OSError, ValueError):  # it already ended, or a limit that cannot be lowered
            resource.prlimit(pid, resource.RLIMIT_DATA, (memory, memory))


def run_bounded(argv, cwd, timeout, limit, env=None, memory=None):
    """``(returncode, stdout, stderr)`` of ``argv`` run in ``cwd`` (with ``env``, else this process's environment)
    with no input, stopped (killed) after ``timeout`` seconds (``subprocess.TimeoutExpired``) or once it wrote more
    than ``limit`` bytes to its standard output (:class:`OutputTooLarge`; ``limit`` 0 or ``None``: no limit), its
    heap bounded to ``memory`` bytes (:class:`OutOfMemory` when it fails for want of more; ``None``: no bound).
    Its standard error is kept up to 64 KiB: enough for kustomize's message."""
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    _bound_memory(proc.pid, memory)
    deadline = time.monotonic() + timeout
    chunks = {proc.stdout: [], proc.stderr: []}
    sizes = {proc.stdout: 0, proc.stderr: 0}
    try:
        with selectors.DefaultSelector() as selector:
            for stream in chunks:
                selector.register(stream, selectors.EVENT_READ)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _events in selector.select(left):
                    data = os.read(key.fd, 65536)
                    if not data:
                        selector.unregister(key.fileobj)
                        continue
                    sizes[key.fileobj] += len(data)
                    if key.fileobj is proc.stdout and limit and sizes[key.fileobj] > limit:
                        raise OutputTooLarge()
                    if key.fileobj is proc.stdout or sizes[key.fileobj] <= 65536:
                        chunks[key.fileobj].append(data)
        returncode = proc.wait(max(deadline - time.monotonic(), 0.1))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    stderr = b"".join(chunks[proc.stderr])
    if memory and returncode != 0 and re.search(rb"^fatal error: .*out of memory", stderr, re.M):
        raise OutOfMemory()
    return returncode, b"".join(chunks[proc.stdout]), stderr
