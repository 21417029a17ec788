"""Bad input (issue 9): every case of ``corpus/`` fails with a clear error naming the file and leaves
the cluster exactly as it was (simulator state dump compared).

Through the real path: one ``ansible-playbook`` run loops over the cases (lookup + module, each in
``block``/``rescue``). The cases that could hang or blow up a renderer (YAML bomb, deep nesting, a
huge document) each run in a subprocess with a time limit, through the same lookup + module.
"""

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from . import helpers as H

pytestmark = pytest.mark.sim_only

CORPUS = Path(__file__).resolve().parent / "corpus"
DANGEROUS = ("yaml-bomb", "yaml-size-bomb", "deeply-nested", "huge-document")
#: cases written at test time (not worth a file in git)
GENERATED = ("huge-document", "yaml-size-bomb")
#: case -> (file the error must name, words the error must contain (any of))
EXPECT = {
    "invalid-yaml": ("bad.yaml", ["YAML"]),
    "not-a-mapping": ("bad.yaml", ["not a mapping"]),
    "missing-apiversion": ("bad.yaml", ["apiVersion"]),
    "missing-kind": ("bad.yaml", ["kind"]),
    "missing-name": ("bad.yaml", ["name"]),
    "generate-name": ("bad.yaml", ["generateName"]),
    "non-string-name": ("bad.yaml", ["name"]),
    "duplicate-object": ("bad.yaml", ["twice", "duplicate"]),
    "template-error": ("bad.yaml.j2", ["no_such_variable_in_this_play", "undefined"]),
    "template-lookup": ("bad.yaml.j2", ["template refused: 'lookup' is not available"]),
    "kustomize-remote": ("bad/kustomization.yaml", ["is a remote reference"]),
    "non-utf8": ("bad.yaml", ["UTF-8"]),
    "oversize-file": ("bad.yaml", ["limit", "max_file_size"]),
    "non-dns-name": ("bad.yaml", ["name", "Bad_Name"]),
    "non-dns-namespace": ("bad.yaml", ["namespace"]),
    "long-label-value": ("bad.yaml", ["label"]),
    "bad-label-key": ("bad.yaml", ["label", "key"]),
    "labels-not-mapping": ("bad.yaml", ["labels"]),
    "annotation-not-string": ("bad.yaml", ["annotations", "string"]),
    "namespace-not-string": ("bad.yaml", ["namespace"]),
    "metadata-not-mapping": ("bad.yaml", ["metadata"]),
    "unknown-kind": ("bad.yaml", ["Nope"]),
    "yaml-bomb": ("bad.yaml", ["alias", "anchor", "too", "large", "limit"]),
    "yaml-size-bomb": ("bad.yaml", ["expands to more than 33554432 bytes through YAML anchors and aliases"]),
    "deeply-nested": ("bad.yaml", ["nest", "deep", "depth"]),
    "huge-document": ("huge.yaml", ["large", "size", "limit", "long", "bytes"]),
}
MAX_FILE_SIZE = {"oversize-file": 2048}

# Bugs these tests found (issue 9), marked strict so a fix makes the marker fail and get removed.
KNOWN = {}


def cases_for(test, names):
    return [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=KNOWN[(test, c)])) if (test, c) in KNOWN else c
            for c in sorted(names)]

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    # one looped task: a failing item (lookup or module) fails only itself. The url lookup, evaluated
    # first, marks the start of each case in the simulator's request log.
    - name: every case
      stacksync.k8s.stack:
        name: "{{ stack }}"
        kubeconfig: "{{ kc }}"
        namespace: "{{ ns }}"
        record_namespace: "{{ ns }}"
        resources: >-
          {{ query('ansible.builtin.url', server ~ '/version?corpus-case=' ~ case, ca_path=ca | default(omit), split_lines=false)
             | ternary(query('stacksync.k8s.manifests', corpus ~ '/' ~ case, max_file_size=limits[case] | default(10485760)), []) }}
      loop: "{{ cases }}"
      loop_control:
        loop_var: case
      register: outcome
      ignore_errors: true
    - name: save
      ansible.builtin.copy:
        content: "{{ dict(outcome.results | map(attribute='case') | zip(outcome.results | map('dict2items')
                     | map('selectattr', 'key', 'in', ['failed', 'msg', 'changed']) | map('items2dict'))) | to_json }}"
        dest: "{{ out }}"
"""


def _state(kubesim):
    """The cluster as the simulator stores it (Leases excluded: a lock taken and released is fine)."""
    dump = kubesim.dump()
    dump.pop("coordination.k8s.io/leases", None)
    return json.dumps(dump, sort_keys=True)


def _limit_memory(limit):
    """A ``preexec_fn`` capping the address space of the process (and of the workers it forks) at ``limit`` bytes."""
    def preexec():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return preexec


def _run(tmp_path, kubesim, ns, stack, cases, corpus, timeout, memory=None):
    play = tmp_path / "play.yml"
    play.write_text(PLAYBOOK)
    out = tmp_path / (f"out-{uuid.uuid4().hex[:6]}.json")
    extra = tmp_path / "vars.json"
    variables = dict(cases=cases, corpus=str(corpus), kc=kubesim.kubeconfig, ns=ns, stack=stack, limits=MAX_FILE_SIZE,
                     out=str(out), server=kubesim.server)
    if kubesim.ca_cert:
        variables["ca"] = kubesim.ca_cert
    extra.write_text(json.dumps(variables))
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=" + sys.executable, "-e", "@" + str(extra), str(play)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_limit_memory(memory) if memory else None)
    try:
        output = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        H.kill_tree(proc.pid)  # the forked worker too: it would go on burning CPU
        proc.communicate()
        return None, f"did not finish within {timeout}s"
    if not out.exists():
        return None, output[-3000:]
    return json.loads(out.read_text()), output


def writes_per_case(kubesim, mark):
    """``{case: [write requests that succeeded]}`` from the request log, split at the case markers."""
    out = {}
    case = None
    for e in list(kubesim.requests)[mark:]:
        if e["path"] == "/version" and "corpus-case" in (e.get("query") or {}):
            case = e["query"]["corpus-case"]
            if isinstance(case, list):
                case = case[0]
            out.setdefault(case, [])
            continue
        if case and e["method"] in ("POST", "PUT", "PATCH", "DELETE") and 200 <= e["code"] < 300 \
                and e["resource"] != "coordination.k8s.io/leases":
            out[case].append("{} {}".format(e["method"], e["path"]))
    return out


@pytest.fixture(scope="module")
def corpus_env(kubesim, tmp_path_factory):
    """A stack already synced (so a partial apply or a prune would show), and a copy of the corpus
    with the generated huge document."""
    tmp = tmp_path_factory.mktemp("corpus")
    corpus = tmp / "corpus"
    shutil.copytree(CORPUS, corpus)
    huge = corpus / "huge-document"
    huge.mkdir()
    shutil.copy(corpus / "yaml-bomb" / "a-ok.yaml", huge / "a-ok.yaml")
    (huge / "a-ok.yaml").write_text((huge / "a-ok.yaml").read_text().replace("yaml-bomb", "huge-document"))
    # 3 MiB in one document: more than a ConfigMap may hold (1 MiB) and than one request may carry
    (huge / "huge.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge\ndata:\n  v: \"%s\"\n"
                                    % ("x" * (3 * 1024 * 1024)))
    # 0.7 MB whose aliases expand to 15 GB: a 100 kB string, aliased 150000 times
    bomb = corpus / "yaml-size-bomb"
    bomb.mkdir()
    (bomb / "a-ok.yaml").write_text((huge / "a-ok.yaml").read_text().replace("huge-document", "yaml-size-bomb"))
    aliases = "\n".join("  - [" + ", ".join(["*b"] * 1000) + "]" for _ in range(150))
    (bomb / "bad.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  big: &b "
                                   + "x" * 100000 + "\nlist:\n" + aliases + "\n")
    admin = H.client_for(kubesim.kubeconfig)
    ns = "corpus-" + uuid.uuid4().hex[:6]
    H.create_namespace(admin, ns)
    stack = "corpus-" + ns
    base = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base", "namespace": ns}, "data": {"v": "original"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": ns}, "data": {"v": "original"}}]
    _cs, err = H.sync(admin, stack, base, namespace=ns, record_namespace=ns)
    assert err is None, err
    return dict(corpus=corpus, ns=ns, stack=stack, tmp=tmp)


@pytest.fixture(scope="module")
def corpus_results(kubesim, corpus_env):
    cases = sorted(c for c in EXPECT if c not in DANGEROUS)
    before = _state(kubesim)
    mark = len(kubesim.requests)
    results, log = _run(corpus_env["tmp"], kubesim, corpus_env["ns"], corpus_env["stack"], cases, corpus_env["corpus"], 300)
    assert results is not None, log
    writes = writes_per_case(kubesim, mark)
    assert set(writes) == set(cases), f"case markers missing from the request log: {sorted(set(cases) - set(writes))}"
    return dict(results=results, before=before, after=_state(kubesim), writes=writes)


def _check(case, outcome):
    filename, words = EXPECT[case]
    assert outcome is not None, f"{case}: no outcome recorded"
    assert outcome["failed"], f"{case}: the sync did not fail ({outcome})"
    msg = outcome["msg"]
    assert filename in msg, f"{case}: the error does not name {filename}: {msg[:500]}"
    assert any(w.lower() in msg.lower() for w in words), f"{case}: unclear error: {msg[:500]}"


def test_corpus_is_complete():
    assert sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) == sorted(c for c in EXPECT if c not in GENERATED)


def test_bad_input_leaves_cluster_exactly_as_before(corpus_results):
    """Whatever the message, the cluster state is byte-for-byte what it was before the corpus run."""
    assert corpus_results["before"] == corpus_results["after"], "a bad repo changed the cluster"


@pytest.mark.parametrize("case", cases_for("error", (c for c in EXPECT if c not in DANGEROUS)))
def test_bad_input_clear_error_naming_the_file(corpus_results, case):
    _check(case, corpus_results["results"].get(case))


@pytest.mark.parametrize("case", cases_for("writes", (c for c in EXPECT if c not in DANGEROUS)))
def test_bad_input_writes_nothing(corpus_results, case):
    """Per case, from the request log: not one successful write (the Lease of a lock aside)."""
    assert not corpus_results["writes"][case], "{} wrote to the cluster: {}".format(case, corpus_results["writes"][case])


@pytest.mark.parametrize("case", cases_for("dangerous", DANGEROUS))
def test_dangerous_input_fails_fast_clearly_and_changes_nothing(kubesim, corpus_env, case):
    before = _state(kubesim)
    # within 15 s and 4 GiB of address space (the playbook and its workers; ansible-playbook reserves ~3 GiB of it,
    # unused): a bomb must fail fast, not eat the machine
    results, log = _run(corpus_env["tmp"], kubesim, corpus_env["ns"], corpus_env["stack"], [case], corpus_env["corpus"], 15,
                        memory=4 * 1024 ** 3)
    after = _state(kubesim)
    assert results is not None, f"{case}: {log[-1500:]}"
    _check(case, results.get(case))
    assert before == after, f"{case} changed the cluster"
