"""naming.py: the stack name rule and URL redaction."""

import re
import subprocess
import sys

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import (
    legacy_stack_name,
    redact_url,
    source_id,
    stack_name,
    url_userinfo,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.validation import valid_label_value
from hypothesis import given, settings
from hypothesis import strategies as st

LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


# Tokens from an alphabet ("QXZW") that the surrounding URL parts never use.
TOKEN = st.text(alphabet="QXZW", min_size=6, max_size=40)


USER = st.text(alphabet="QXZW", min_size=1, max_size=10)


SEGMENT = st.text(alphabet="abcdefghijklmnop0123456789-_.", min_size=1, max_size=20)


SCHEME = st.sampled_from(["https", "http", "ssh", "git+ssh"])


@pytest.mark.parametrize("url, path, expected", [
    ("https://github.com/acme/infra.git", "", "github.com-acme-infra"),
    ("https://user:tok@github.com/acme/infra.git", "clusters/prod", "github.com-acme-infra-clusters-prod"),
    ("https://x-access-token:ghp_abc123@github.com/acme/infra", "", "github.com-acme-infra"),
    ("git@github.com:acme/infra.git", "", "github.com-acme-infra"),
    ("ssh://git@github.com:22/acme/infra.git", "", "github.com-22-acme-infra"),
    ("file:///srv/git/infra.git", "", "srv-git-infra"),
    ("/srv/git/infra.git", "", "srv-git-infra"),
    ("/srv/git/infra/", "./apps/", "srv-git-infra-apps"),
    ("../infra", "", "infra"),
    ("HTTPS://GitHub.com/Acme/Infra.GIT", "Clusters/Prod", "github.com-acme-infra-clusters-prod"),
    ("https://gitlab.com/a_b/c__d.git?private_token=secret#frag", "", "gitlab.com-a-b-c-d"),
    ("https://host/org/repo.git/", "clusters//prod/", "host-org-repo-clusters-prod"),
    ("https://host/-weird-/.repo.", "", "host-weird-repo"),
    ("https://host/a..b/c.-d", "", "host-a.b-c-d"),
])
def test_legacy_names(url, path, expected):
    assert legacy_stack_name(url, path) == expected
    assert valid_label_value(expected)


def test_legacy_same_repo_different_credentials_or_spelling_same_name():
    a = legacy_stack_name("https://alice:one@github.com/acme/infra.git", "prod")
    b = legacy_stack_name("https://bob:two@github.com/acme/infra", "/prod/")
    assert a == b


def test_legacy_long_names_are_shortened_with_a_stable_hash():
    url = "https://git.example.com/" + "/".join(f"group{i}" for i in range(20)) + "/repo.git"
    one = legacy_stack_name(url, "clusters/prod")
    two = legacy_stack_name(url, "clusters/staging")
    assert len(one) == 63 and valid_label_value(one) and LABEL_RE.match(one)
    assert one == legacy_stack_name(url, "clusters/prod")  # stable
    assert one != two  # the hash tells them apart although the kept prefix is the same
    assert one[:52] == two[:52]
    assert re.search(r"-[0-9a-f]{10}$", one)


def test_legacy_shortened_name_does_not_end_in_punctuation():
    # The cut falls right after a '-' or '.'; it must be trimmed before the hash.
    for n in range(40, 60):
        name = legacy_stack_name("https://h/" + "a" * n + "-.b" * 10)
        assert valid_label_value(name), name


def test_legacy_exactly_63_characters_kept_as_is():
    name = "a" * 63
    assert legacy_stack_name(name) == name
    assert legacy_stack_name("a" * 64) != "a" * 64 and len(legacy_stack_name("a" * 64)) == 63


@pytest.mark.parametrize("url", ["", "   ", "://", "https://user:pw@/", "---", "file:///"])
def test_legacy_nothing_left_is_an_error(url):
    with pytest.raises(ValueError):
        legacy_stack_name(url)


def test_legacy_error_does_not_leak_credentials():
    with pytest.raises(ValueError) as info:
        legacy_stack_name("https://user:Sup3rSecret@/")
    assert "Sup3rSecret" not in str(info.value)


def test_legacy_type_errors():
    with pytest.raises(TypeError):
        legacy_stack_name(None)
    with pytest.raises(TypeError):
        legacy_stack_name("https://h/r", path=3)
    assert legacy_stack_name("https://h/r", path=None) == "h-r"


@pytest.mark.parametrize("url, expected", [
    ("https://user:tok@github.com/acme/infra.git", "https://github.com/acme/infra.git"),
    ("https://tok@github.com/acme/infra.git", "https://github.com/acme/infra.git"),
    ("https://github.com/acme/infra.git", "https://github.com/acme/infra.git"),
    ("git@github.com:acme/infra.git", "github.com:acme/infra.git"),
    ("file:///srv/git/infra.git", "file:///srv/git/infra.git"),
    ("/srv/git/infra.git", "/srv/git/infra.git"),
    ("fatal: unable to access 'https://u:p@h/r.git/': 403 (see https://x:y@h/z)",
     "fatal: unable to access 'https://h/r.git/': 403 (see https://h/z)"),
    # query strings and fragments carry tokens too (GitLab's private_token, an OAuth access_token)
    ("https://gitlab.com/g/r.git?private_token=glpat-S3cret", "https://gitlab.com/g/r.git"),
    ("https://u:p@h/r.git?access_token=S3cret#frag", "https://h/r.git"),
    ("fatal: unable to access 'https://h/r.git/?access_token=S3cret': 403",
     "fatal: unable to access 'https://h/r.git/': 403"),
    ('repository "https://h/r?a=1&token=S3cret" not found, see https://h/r?x=S3cret.',
     'repository "https://h/r" not found, see https://h/r'),
])
def test_redact_url(url, expected):
    assert redact_url(url) == expected


@settings(max_examples=300, deadline=None)
@given(scheme=SCHEME, user=USER, token=TOKEN, host=SEGMENT, parts=st.lists(SEGMENT, min_size=1, max_size=12),
       path=st.lists(SEGMENT, max_size=5))
def test_no_credential_survives(scheme, user, token, host, parts, path):
    url = "{}://{}:{}@{}/{}.git".format(scheme, user, token, host, "/".join(parts))
    try:
        name = stack_name(url, "/".join(path))
    except ValueError:
        return
    assert valid_label_value(name) and LABEL_RE.match(name) and len(name) <= 63
    assert token.lower() not in name and "q" not in name and "x" not in name and "z" not in name and "w" not in name
    assert token not in redact_url(url) and user + ":" not in redact_url(url)
    # The name does not depend on the credentials at all.
    assert name == stack_name("{}://{}/{}.git".format(scheme, host, "/".join(parts)), "/".join(path))


@settings(max_examples=300, deadline=None)
@given(url=st.text(max_size=200), path=st.text(max_size=80))
def test_always_a_valid_label_value_or_value_error(url, path):
    try:
        name = stack_name(url, path)
    except ValueError:
        with pytest.raises(ValueError):
            source_id(url, path)
        return
    assert valid_label_value(name) and LABEL_RE.match(name) and len(name) <= 63
    assert name == stack_name(url, path)
    assert re.search(r"(^|-)[0-9a-f]{10}$", name)


def test_mask_keeps_the_shape_of_the_url():
    assert redact_url("https://u:p@h/r.git?private_token=S3cret", mask="***") == "https://***@h/r.git?***"
    assert url_userinfo("see https://u:p@h/r.git?private_token=S3cret and https://h/x") == {
        "u:p", "private_token=S3cret"}


# -- the names since 0.2.0: injective, short, one per repository whatever its spelling ----------------------
ONE_REPO = [
    ("https://github.com/acme/apps.git", "prod"),
    ("https://github.com/acme/apps", "prod"),
    ("https://github.com/acme/apps/", "./prod/"),
    ("https://GitHub.COM/acme/apps.git", "prod"),
    ("https://github.com:443/acme/apps", "prod"),
    ("https://deploy:ghp_T0ken@github.com/acme/apps.git?access_token=x", "prod"),
    ("git@github.com:acme/apps.git", "prod"),
    ("github.com:acme/apps", "/prod"),
    ("ssh://git@github.com/acme/apps", "prod"),
    ("ssh://git@github.com:22/acme/apps.git", "prod"),
    ("git+ssh://git@github.com/acme//apps.git", "prod/"),
]


def test_spellings_of_one_repository_are_one_stack():
    assert set(source_id(u, p) for u, p in ONE_REPO) == {"github.com/acme/apps#prod"}
    assert len(set(stack_name(u, p) for u, p in ONE_REPO)) == 1
    assert stack_name(*ONE_REPO[0]).startswith("apps-prod-")


@pytest.mark.parametrize("one, two", [
    # the pair whose legacy names collide (github.com-acme-apps-prod): syncing one pruned the other
    (("https://github.com/acme/apps", "prod"), ("https://github.com/acme/apps-prod", "")),
    (("https://github.com/acme/apps", "a/b"), ("https://github.com/acme/apps", "a-b")),
    (("https://github.com/acme/apps", "a/b"), ("https://github.com/acme/apps/a", "b")),
    (("https://github.com/acme/apps", ""), ("https://github.com/acme_apps", "")),
    (("https://github.com/Acme/Apps", ""), ("https://github.com/acme/apps", "")),  # paths are case-sensitive
    (("https://h:8443/x", ""), ("https://h/x", "")),  # a port other than the scheme's is another server
    (("https://h/x", ""), ("h/x", "")),  # a relative local path named like a URL
    (("/srv/a#b", ""), ("/srv/a", "b")),
    (("/srv/a.b", ""), ("/srv/a-b", "")),
])
def test_distinct_sources_get_distinct_names(one, two):
    assert source_id(*one) != source_id(*two)
    assert stack_name(*one) != stack_name(*two)


def test_the_legacy_names_of_two_sources_collided():
    """Why the names changed: the legacy rule gave both the same stack (syncing one pruned the other)."""
    assert legacy_stack_name("https://github.com/acme/apps", "prod") == legacy_stack_name(
        "https://github.com/acme/apps-prod") == "github.com-acme-apps-prod"
    assert stack_name("https://github.com/acme/apps", "prod") != stack_name("https://github.com/acme/apps-prod")


@settings(max_examples=500, deadline=None)
@given(a=st.tuples(st.lists(SEGMENT, min_size=1, max_size=4), st.lists(SEGMENT, max_size=3)),
       b=st.tuples(st.lists(SEGMENT, min_size=1, max_size=4), st.lists(SEGMENT, max_size=3)))
def test_names_are_injective_on_normalised_sources(a, b):
    """Distinct normalised (repository path, directory) pairs never share an id or a name."""
    def norm(segments):
        out = [s for s in segments if s != "."]
        if out and out[-1].lower().endswith(".git"):
            out[-1] = out[-1][:-4]
        return tuple(s for s in out if s)

    (repo_a, path_a), (repo_b, path_b) = a, b
    ida = source_id("https://h/" + "/".join(repo_a), "/".join(path_a))
    idb = source_id("https://h/" + "/".join(repo_b), "/".join(path_b))
    if (norm(repo_a), norm(path_a)) != (norm(repo_b), norm(path_b)) and norm(repo_a):
        assert ida != idb
        assert stack_name("https://h/" + "/".join(repo_a), "/".join(path_a)) != stack_name(
            "https://h/" + "/".join(repo_b), "/".join(path_b))


@pytest.mark.parametrize("url, path, expected_id, prefix", [
    ("/tmp/newcomer/gitrepo", "deploy", "file:///tmp/newcomer/gitrepo#deploy", "gitrepo-deploy-"),
    ("file:///tmp/newcomer/gitrepo.git", "deploy/", "file:///tmp/newcomer/gitrepo#deploy", "gitrepo-deploy-"),
    ("file://localhost/srv/x", "", "file:///srv/x", "x-"),
    ("../infra", ".", "file://../infra", "infra-"),
    ("https://user:tok@gitlab.example.com/group/sub/cluster-config.git?private_token=p", "clusters/prod",
     "gitlab.example.com/group/sub/cluster-config#clusters/prod", "cluster-config-clusters-prod-"),
    ("ssh://git@git.example.com:2222/acme/infra", "", "git.example.com:2222/acme/infra", "infra-"),
    ("https://[::1]:8080/x.git", "", "[::1]:8080/x", "x-"),
])
def test_source_ids_and_short_readable_names(url, path, expected_id, prefix):
    assert source_id(url, path) == expected_id
    name = stack_name(url, path)
    assert name.startswith(prefix) and len(name) == len(prefix) + 10 and valid_label_value(name), name


def test_long_sources_keep_a_readable_head_and_their_hash():
    url = "https://git.example.com/" + "/".join(f"group{i}" for i in range(20)) + "/repo.git"
    one, two = stack_name(url, "clusters/" + "x" * 80), stack_name(url, "clusters/" + "x" * 79)
    assert len(one) == 63 and one != two and one.startswith("repo-clusters-xxx") and valid_label_value(one)


@pytest.mark.parametrize("url", ["", "   ", "https://user:pw@/", "file:///", "/"])
def test_a_url_naming_nothing_is_an_error(url):
    with pytest.raises(ValueError, match="cannot derive a stack name"):
        stack_name(url)
    with pytest.raises(ValueError):
        source_id(url, "x")


def test_source_ids_never_carry_credentials():
    for url in ("https://deploy-bot:ghp_T0ken@github.com/acme/x.git?access_token=ghp_T0ken#ghp_T0ken",
                "ssh://git:ghp_T0ken@h:2222/x", "https://ghp_T0ken@h/x"):
        assert "T0ken" not in source_id(url, "p") and "deploy-bot" not in source_id(url, "p")
    with pytest.raises(ValueError) as e:
        stack_name("https://user:Sup3rSecret@/?token=Sup3rSecret")
    assert "Sup3rSecret" not in str(e.value)


def test_naming_module_imports_on_its_own():
    # module_utils must not pull in controller-only code.
    code = ("import sys; sys.path.insert(0, %r); "
            "from ansible_collections.stacksync.k8s.plugins.module_utils.base import naming; "
            "assert 'ansible' not in sys.modules; print(naming.legacy_stack_name('git@h:o/r.git'))")
    root = __import__("ansible_collections.stacksync.k8s", fromlist=["x"]).__path__[0]
    collections_root = root.rsplit("/ansible_collections/", 1)[0]
    out = subprocess.run([sys.executable, "-c", code % collections_root], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "h-o-r"
