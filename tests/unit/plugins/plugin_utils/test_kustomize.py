"""Unit tests for plugins/plugin_utils/kustomize.py and how render runs kustomize: kustomizations build from
their repository alone (no remote bases, resources or files; nothing outside the checkout) unless the
source allows remote references. Real kubectl kustomize, a real HTTP server on 127.0.0.1."""

import http.server
import json
import os
import shutil
import threading

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import kustomize as K
from ansible_collections.stacksync.k8s.plugins.plugin_utils import render as R
from ansible_collections.stacksync.k8s.plugins.plugin_utils import render_kustomize

from tests.unit.plugins.plugin_utils.test_render import CM, names, needs_kustomize, render_error, write


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.paths.append(self.path)
        body = self.server.files.get(self.path.split("?")[0])
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write((body or "").encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def web():
    """An HTTP server on 127.0.0.1 serving a manifest and a file, recording every request it gets."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.paths = []
    server.files = {"/cm.yaml": CM.format(name="from-the-network"), "/x.txt": "fetched\n", "/base/kustomization.yaml":
                    "resources: [cm.yaml]\n"}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()


#: kustomization.yaml text (``{url}``: the server) -> the field and reference the refusal names
REMOTE = {
    "resource": ("resources:\n- {url}/cm.yaml\n", "resources '{url}/cm.yaml'"),
    "base": ("bases:\n- {url}/base\n", "bases '{url}/base'"),
    "component": ("components:\n- {url}/component\n", "components '{url}/component'"),
    "git-resource": ("resources:\n- https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v3.3.1\n",
                     "resources 'https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v3.3.1'"),
    "github-shorthand": ("resources:\n- github.com/org/repo//deploy?ref=v1\n", "resources 'github.com/org/repo//deploy?ref=v1'"),
    "scp-like": ("resources:\n- git@github.com:org/repo.git\n", "resources 'git@github.com:org/repo.git'"),
    "generator-file": ("configMapGenerator:\n- name: gen\n  files:\n  - k={url}/x.txt\n",
                       "configMapGenerator '{url}/x.txt'"),
    "generator-file-no-key": ("secretGenerator:\n- name: gen\n  files:\n  - {url}/x.txt\n",
                              "secretGenerator '{url}/x.txt'"),
    "generator-envs": ("configMapGenerator:\n- name: gen\n  envs:\n  - {url}/x.txt\n", "configMapGenerator '{url}/x.txt'"),
    "patch": ("resources: [cm.yaml]\npatches:\n- path: {url}/x.txt\n", "patches '{url}/x.txt'"),
    "strategic-merge": ("resources: [cm.yaml]\npatchesStrategicMerge:\n- {url}/x.txt\n",
                        "patchesStrategicMerge '{url}/x.txt'"),
    "openapi": ("resources: [cm.yaml]\nopenapi:\n  path: {url}/x.txt\n", "openapi '{url}/x.txt'"),
    "crds": ("resources: [cm.yaml]\ncrds:\n- {url}/x.txt\n", "crds '{url}/x.txt'"),
    "helm-chart": ("helmCharts:\n- name: redis\n  repo: {url}/charts\n", "helmCharts '{url}/charts'"),
    "in-a-local-base": ("resources: [local]\n", "resources '{url}/cm.yaml'"),
}


@needs_kustomize
@pytest.mark.parametrize("case", sorted(REMOTE))
def test_a_remote_reference_is_refused_before_kustomize_runs(tmp_path, web, case):
    text, named = REMOTE[case]
    write(tmp_path, {"repo/app/kustomization.yaml": text.format(url=web.url), "repo/app/cm.yaml": CM.format(name="a"),
                     "repo/app/local/kustomization.yaml": f"resources:\n- {web.url}/cm.yaml\n"})
    err = render_error(tmp_path / "repo" / "app", root=str(tmp_path / "repo"))
    kfile = "app/local/kustomization.yaml" if case == "in-a-local-base" else "app/kustomization.yaml"
    assert err.path == "app/" and err.problem.startswith(kfile + ": " + named.format(url=web.url)), err.problem
    assert "is a remote reference (kustomize would fetch it from the network): refused" in err.problem
    assert "kustomize_remote: true" in err.problem
    assert web.paths == []  # the server got no request


@needs_kustomize
def test_remote_references_are_fetched_when_the_source_allows_them(tmp_path, web):
    """The control of the test above: with kustomize_remote, kustomize does fetch them from the server."""
    write(tmp_path, {"app/kustomization.yaml": REMOTE["resource"][0].format(url=web.url)
                     + REMOTE["generator-file"][0].format(url=web.url)})
    manifests = R.render(str(tmp_path / "app"), kustomize_remote=True)
    assert "from-the-network" in names(manifests) and sorted(web.paths) == ["/cm.yaml", "/x.txt"]


@needs_kustomize
def test_files_outside_the_kustomization_are_refused_by_kustomize_and_outside_the_checkout_by_us(tmp_path):
    write(tmp_path, {"secret.txt": "controller secret\n",
                     "repo/shared.txt": "in the repository, outside the kustomization\n",
                     "repo/app/kustomization.yaml": "configMapGenerator:\n- name: g\n  files:\n  - ../shared.txt\n"})
    # root only (kustomize's load restrictor, written out): a file above the kustomization is refused by kustomize
    err = render_error(tmp_path / "repo" / "app", root=str(tmp_path / "repo"))
    assert "kustomize failed" in err.problem and "shared.txt" in err.problem and "not in or below" in err.problem
    # outside the checkout: refused before kustomize runs (a relative path, an absolute one, a symlink)
    for files in (["k=../../secret.txt"], [str(tmp_path / "secret.txt")], ["link.txt"]):
        write(tmp_path, {"repo/app/kustomization.yaml": "configMapGenerator:\n- name: g\n  files:\n"
                                                        + "".join(f"  - {f}\n" for f in files)})
        if files == ["link.txt"]:
            os.symlink(str(tmp_path / "secret.txt"), str(tmp_path / "repo" / "app" / "link.txt"))
        err = render_error(tmp_path / "repo" / "app", root=str(tmp_path / "repo"))
        assert "app/kustomization.yaml: configMapGenerator" in err.problem, err.problem
        assert "resolves outside the checkout: refused" in err.problem and "controller secret" not in err.problem


@needs_kustomize
def test_the_default_command_writes_the_root_only_load_restrictor_out():
    assert render_kustomize.default_kustomize_command()[-1] == "--load-restrictor=LoadRestrictionsRootOnly"


@pytest.mark.parametrize("reference, remote", [
    ("https://example.com/x.yaml", True), ("http://127.0.0.1:8080/x", True), ("ssh://git@host/org/repo", True),
    ("git::https://host/org/repo", True), ("gh:org/repo", True), ("git@github.com:org/repo", True),
    ("github.com/org/repo//path", True), ("dev.azure.com/org/proj/_git/repo", True), ("file:///etc", True),
    ("x@y/z.git?ref=v1", True), ("a+b.c@host.example/org/repo", True), ("u@h:org/repo", True),
    ("base", False), ("../base", False), ("overlays/prod", False), ("cm.yaml", False), ("my@file.yaml", False),
])
def test_is_remote_as_kustomize_tells_a_remote_reference(reference, remote):
    assert K.is_remote(reference) is remote


def test_references_cover_every_field_that_names_a_path():
    data = {"resources": ["a"], "bases": ["b"], "components": ["c"], "crds": ["d"],
            "configurations": ["e"], "generators": ["f", "apiVersion: v1\nkind: X\n"], "transformers": ["g"], "validators": ["h"],
            "patchesStrategicMerge": ["i", "apiVersion: v1\nkind: ConfigMap\n"], "patches": [{"path": "j"}, {"patch": "inline"}],
            "patchesJson6902": [{"path": "k"}], "replacements": [{"path": "l"}], "openapi": {"path": "m"},
            "configMapGenerator": [{"files": ["n", "key=o"], "envs": ["p"], "env": "q", "literals": ["x=http://y"]}],
            "secretGenerator": [{"files": ["r"]}], "helmCharts": [{"repo": "s"}, {"name": "local-chart"}],
            "helmChartInflationGenerator": [{"chartRepoUrl": "t"}], "helmGlobals": {"chartHome": "u"}}
    refs = sorted(ref for _field, ref, _kind in K.references(data))
    assert refs == [chr(c) for c in range(ord("a"), ord("v"))]  # inline patches and literals are not references


def test_kustomizes_output_is_bounded(tmp_path):
    fake = tmp_path / "fake-kustomize"
    fake.write_text("#!/bin/sh\nyes 'a: b' | head -c 100000000\n")
    fake.chmod(0o755)
    write(tmp_path, {"k/kustomization.yaml": "resources: []\n"})
    err = render_error(tmp_path / "k", kustomize=[str(fake)], max_file_size=1000)
    assert err.problem == "kustomize's output is over the 8000 byte limit (8 times max_file_size): stopped it"


#: what a hostile repository writes to reach the controller, and what the refusal says (remote references allowed
#: or not)
HOSTILE = {
    # kustomize hands ?ref= to `git fetch` as an argument: an option runs a command on the controller
    "ref-option": ("resources:\n- x@y/z.git?ref=--upload-pack=touch%20{mark}%3Bfalse\n", "would be read by git as an option"),
    "ref-option-encoded": ("resources:\n- https://h.example/r.git?ref=%252D%252Dupload-pack=touch%20{mark}\n",
                           "would be read by git as an option"),
    "version-option": ("resources:\n- github.com/o/r//d?version=-oProxyCommand=touch%20{mark}\n",
                       "would be read by git as an option"),
    "file-url": ("resources:\n- file:///etc/kubernetes\n", "it names the controller's own files"),
    "git-file-url": ("resources:\n- git::file:///srv/other-tenant.git\n", "it names the controller's own files"),
}


@pytest.mark.parametrize("remote", [False, True])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_references_that_reach_the_controller_are_refused_even_where_remote_ones_are_allowed(tmp_path, case, remote):
    mark = tmp_path / "PWNED"
    text, said = HOSTILE[case]
    write(tmp_path, {"repo/app/kustomization.yaml": text.format(mark=mark)})
    err = render_error(tmp_path / "repo" / "app", root=str(tmp_path / "repo"), kustomize_remote=remote,
                       kustomize=["/bin/sh", "-c", f"touch {mark}-ran"])  # never run
    assert err.problem.startswith("app/kustomization.yaml: resources "), err.problem
    assert said in err.problem and err.problem.endswith(": refused"), err.problem  # the danger named, allowed or not
    assert not mark.exists() and not (tmp_path / "PWNED-ran").exists()


@pytest.mark.parametrize("text, said", [
    # kustomize reads these; the checks could not: a second document, a key twice, not YAML, not a mapping
    ("resources: [cm.yaml]\n---\nresources: [../../other-tenant/app]\n", "holds 2 YAML documents"),
    ("resources: [cm.yaml]\nresources: [../../other-tenant/app]\n", "the key 'resources' is written twice"),
    ("resources: [cm.yaml\n", "is not YAML that can be checked"),
    ("- resources\n", "is not a mapping of kustomization fields"),
])
def test_a_kustomization_the_checks_cannot_read_is_refused(tmp_path, text, said):
    write(tmp_path, {"repo/app/kustomization.yaml": text, "repo/app/cm.yaml": CM.format(name="a")})
    err = render_error(tmp_path / "repo" / "app", root=str(tmp_path / "repo"), kustomize=["/bin/false"])
    assert err.problem.startswith("app/kustomization.yaml: ") and said in err.problem, err.problem
    # a trailing document separator is no second document
    write(tmp_path, {"repo/ok/kustomization.yaml": "resources: [cm.yaml]\n---\n", "repo/ok/cm.yaml": CM.format(name="a")})
    K.check_tree(str(tmp_path / "repo" / "ok"), str(tmp_path / "repo"))


def test_the_checkouts_git_directory_and_a_kustomization_linked_out_are_refused(tmp_path):
    write(tmp_path, {"repo/.git/config": "[remote]\n", "repo/kustomization.yaml":
                     "configMapGenerator:\n- name: g\n  files:\n  - .git/config\n", "other/kustomization.yaml": "resources: []\n"})
    root = str(tmp_path / "repo")
    with pytest.raises(K.KustomizationRefused, match=r"configMapGenerator '\.git/config' is in the checkout's \.git directory"):
        K.check_tree(root, root)
    os.makedirs(str(tmp_path / "repo" / "linked"))
    os.symlink(str(tmp_path / "other" / "kustomization.yaml"), str(tmp_path / "repo" / "linked" / "kustomization.yaml"))
    with pytest.raises(K.KustomizationRefused, match=r"linked/kustomization.yaml resolves outside the checkout"):
        K.check_tree(str(tmp_path / "repo" / "linked"), root)


def test_a_missing_reference_that_kustomize_could_read_as_a_repository_is_refused(tmp_path):
    write(tmp_path, {"repo/app/kustomization.yaml": "resources:\n- weird::thing\n"})
    with pytest.raises(K.KustomizationRefused, match="is not in the checkout"):
        K.check_tree(str(tmp_path / "repo" / "app"), str(tmp_path / "repo"))
    write(tmp_path, {"repo/app/kustomization.yaml": "resources:\n- missing.yaml\n"})  # kustomize says it is missing
    K.check_tree(str(tmp_path / "repo" / "app"), str(tmp_path / "repo"))


def _environment_kustomize_sees(tmp_path, **options):
    fake = tmp_path / "fake-kustomize"
    fake.write_text("#!/bin/sh\nenv > \"$0.env\"\nprintf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: fake}\\n'\n")
    fake.chmod(0o755)
    write(tmp_path, {"k/kustomization.yaml": "resources: []\n"})
    assert names(R.render(str(tmp_path / "k"), kustomize=[str(fake)], **options)) == ["fake"]
    return dict(line.split("=", 1) for line in (tmp_path / "fake-kustomize.env").read_text().splitlines() if "=" in line)


def test_kustomize_runs_without_the_connections_credentials_and_with_a_confined_git(tmp_path, monkeypatch):
    """A trusted source's kustomize has the controller's environment (its git identity included), never the
    connection's credentials."""
    monkeypatch.setenv("K8S_AUTH_API_KEY", "a-token")
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", "/secret/kubeconfig")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/run/agent.sock")
    seen = _environment_kustomize_sees(tmp_path, kustomize_identity=True)
    assert "K8S_AUTH_API_KEY" not in seen and "K8S_AUTH_KUBECONFIG" not in seen
    assert seen["GIT_ALLOW_PROTOCOL"] == "https:http:ssh:git" and seen["GIT_TERMINAL_PROMPT"] == "0"
    assert seen["PATH"] == os.environ["PATH"] and seen["HOME"] == os.environ["HOME"]
    assert seen["SSH_AUTH_SOCK"] == "/run/agent.sock"


def test_an_untrusted_sources_kustomize_has_none_of_the_controllers_identity(tmp_path, monkeypatch):
    """Without kustomize_identity (an untrusted source), a remote base is fetched anonymously: no HOME (.netrc,
    ~/.gitconfig, ~/.ssh), no ssh agent, no git configuration of the job user's or the system's (credential
    helpers), no ssh transport, none of the controller's other variables; the network settings stay."""
    for name, value in (("K8S_AUTH_API_KEY", "a-token"), ("SSH_AUTH_SOCK", "/run/agent.sock"),
                        ("GIT_SSH_COMMAND", "ssh -i /secret/key"), ("GIT_CONFIG_GLOBAL", "/secret/gitconfig"),
                        ("AWS_SECRET_ACCESS_KEY", "s"), ("KUBECONFIG", "/secret/kubeconfig"),
                        ("HTTPS_PROXY", "http://proxy.example:3128"), ("LANG", "C.UTF-8")):
        monkeypatch.setenv(name, value)
    seen = _environment_kustomize_sees(tmp_path)
    assert seen["HOME"] != os.environ["HOME"] and seen["HOME"] == seen["XDG_CONFIG_HOME"]
    assert not os.path.exists(seen["HOME"])  # an empty directory of its own, removed after the run
    assert seen["GIT_CONFIG_GLOBAL"] == os.devnull and seen["GIT_CONFIG_NOSYSTEM"] == "1"
    assert seen["GIT_ALLOW_PROTOCOL"] == "https:http:git" and seen["GIT_TERMINAL_PROMPT"] == "0"
    for name in ("K8S_AUTH_API_KEY", "SSH_AUTH_SOCK", "GIT_SSH_COMMAND", "AWS_SECRET_ACCESS_KEY", "KUBECONFIG"):
        assert name not in seen, name
    assert seen["HTTPS_PROXY"] == "http://proxy.example:3128" and seen["LANG"] == "C.UTF-8"
    assert seen["PATH"] == os.environ["PATH"]


def _memory_bomb(tmp_path):
    """A kustomization of 40 JSON patch copies, each doubling a list: kustomize's memory grows until stopped."""
    ops = [{"op": "add", "path": "/l", "value": ["x" * 1000]}] + [{"op": "copy", "from": "/l", "path": "/l/-"}] * 40
    write(tmp_path, {"bomb/r.yaml": "apiVersion: x.example/v1\nkind: Thing\nmetadata: {name: t}\n",
                     "bomb/kustomization.yaml": json.dumps({"resources": ["r.yaml"], "patches": [
                         {"target": {"kind": "Thing"}, "patch": json.dumps(ops)}]})})
    return str(tmp_path / "bomb")


@pytest.mark.skipif(not shutil.which("kubectl"), reason="needs kubectl (kubectl kustomize)")
def test_kustomizes_memory_is_bounded(tmp_path, monkeypatch):
    """kustomize's heap is bounded (RLIMIT_DATA, which Go's allocations count against): a kustomization that makes
    it allocate without end fails the render, naming the bound, instead of taking the controller's memory."""
    bomb = _memory_bomb(tmp_path)
    with pytest.raises(K.OutOfMemory):
        K.run_bounded(["kubectl", "kustomize", bomb], bomb, 120, 0, memory=256 << 20)
    write(tmp_path, {"ok/kustomization.yaml": "resources: [r.yaml]\nnamePrefix: a-\n",
                     "ok/r.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
    # within the default bound, a kustomization renders as before
    assert names(R.render(str(tmp_path / "ok"), kustomize=["kubectl", "kustomize"], max_file_size=1 << 20)) == ["a-c"]
    assert render_kustomize.kustomize_memory(0) == 1 << 30 and render_kustomize.kustomize_memory(10 << 20) == 1280 << 20
    monkeypatch.setattr(render_kustomize, "KUSTOMIZE_MEMORY", 256 << 20)
    with pytest.raises(R.RenderError, match=r"kustomize needed more than its 256 MB of memory: stopped"):
        R.render(bomb, kustomize=["kubectl", "kustomize"], max_file_size=1 << 20)


@pytest.mark.parametrize("text, said", [
    # kustomize matches field names as Go's encoding/json does: without regard to case
    ("Resources:\n- ../../victim/app\n", "resolves outside"),
    ("RESOURCES:\n- https://h.example/cm.yaml\n", "is a remote reference"),
    ("re\u017fources:\n- ../../victim/app\n", "resolves outside"),
    ("Patches:\n- Path: ../../victim/p.yaml\n", "resolves outside"),
    ("ConfigMapGenerator:\n- name: g\n  Files:\n  - nope/../.git/config\n", "is in the checkout's .git directory"),
    ("Resources:\n- ssh://h.example/org/repo?ref=--upload-pack=touch%20x\n", "would be read by git as an option"),
    # a missing directory, then '..': kustomize cleans the path as text
    ("resources:\n- nope/../../../victim/app\n", "resolves outside"),
    ("components:\n- nope/../../../victim/comp\n", "resolves outside"),
    # a one-line entry starting like YAML is a path to kustomize
    ("resources:\n- '[x]/../../../victim/app'\n", "resolves outside"),
    ("helmCharts:\n- name: c\n  valuesFile: ../../victim/values.yaml\n", "resolves outside"),
])
def test_what_kustomize_reads_in_other_spellings_is_checked_too(tmp_path, text, said):
    write(tmp_path, {"repo/app/kustomization.yaml": text, "victim/app/kustomization.yaml": "resources: []\n"})
    with pytest.raises(K.KustomizationRefused) as info:
        K.check_tree(str(tmp_path / "repo" / "app"), str(tmp_path / "repo"))
    assert said in str(info.value), str(info.value)


@pytest.mark.parametrize("files, said", [
    # go-yaml decodes !!binary into the string it encodes; PyYAML into bytes, which the checks would not read
    ({"repo/app/kustomization.yaml": "resources: [!!binary Li4vLi4vdmljdGlt]\n"}, "holds a binary or set value"),
    ({"repo/app/kustomization.yaml": "!!binary cmVzb3VyY2Vz: [a]\n"}, "holds a binary or set value"),
    # what a plugin configuration names is checked as the kustomization's own references
    ({"repo/kustomization.yaml": "generators: [gen.yaml]\n", "repo/gen.yaml":
      "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: leak}\nfiles: [.git/config]\n"},
     "generators '.git/config' is in the checkout's .git directory"),
    ({"repo/kustomization.yaml": "transformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n"
                                 "  metadata: {name: p}\n  path: ../victim/p.yaml\n"}, "transformers '../victim/p.yaml' resolves outside"),
    ({"repo/kustomization.yaml": "generators: [gen.yaml]\n", "repo/gen.yaml":
      "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata: {name: c}\nchartRepoUrl: https://h.example/charts\n"},
     "generators 'https://h.example/charts' is a remote reference"),
    # nested deeper than libyaml composes (its C stack), a file larger than the limit
    ({"repo/app/kustomization.yaml": "resources: " + "[" * 2000 + "]" * 2000 + "\n"}, "nests flow collections more than"),
])
def test_what_the_checks_could_not_read_is_refused(tmp_path, files, said):
    write(tmp_path, dict(files, **{"repo/.git/config": "[core]\n"}))
    kdir = tmp_path / "repo" / ("app" if any(k.startswith("repo/app/") for k in files) else "")
    with pytest.raises(K.KustomizationRefused) as info:
        K.check_tree(str(kdir).rstrip("/"), str(tmp_path / "repo"))
    assert said in str(info.value), str(info.value)


def test_a_kustomization_over_the_size_limit_is_refused(tmp_path):
    write(tmp_path, {"repo/kustomization.yaml": "resources: []\n" + "# padding\n" * 200})
    with pytest.raises(K.KustomizationRefused, match="is over the 1000 byte limit"):
        K.check_tree(str(tmp_path / "repo"), str(tmp_path / "repo"), max_size=1000)
    K.check_tree(str(tmp_path / "repo"), str(tmp_path / "repo"), max_size=10000)


@pytest.mark.parametrize("inline, said", [
    ("a: " + "[" * 2000 + "]" * 2000, "nests flow collections more than 1000 levels deep"),  # the file's check sees it
    ("path: !!binary Li4vdmljdGlt\nkind: PatchTransformer", "an inline transformers entry: holds a binary or set value"),
    ("a: [\nb", "an inline transformers entry: is not YAML that can be checked"),
], ids=["deep", "binary", "not-yaml"])
def test_an_inline_plugin_configuration_is_read_as_carefully_as_a_file(tmp_path, inline, said):
    text = "transformers:\n- |\n" + "".join("  " + line + "\n" for line in inline.split("\n"))
    write(tmp_path, {"repo/kustomization.yaml": text})
    with pytest.raises(K.KustomizationRefused) as info:
        K.check_tree(str(tmp_path / "repo"), str(tmp_path / "repo"))
    assert said in str(info.value), str(info.value)
