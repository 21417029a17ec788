"""naming.py: the stack name rule and URL redaction."""

import re
import subprocess
import sys

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.naming import (
    normalize_source,
    redact_url,
    stack_name,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.validation import valid_label_value
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
def test_examples(url, path, expected):
    assert stack_name(url, path) == expected
    assert valid_label_value(expected)


def test_same_repo_different_credentials_or_spelling_same_name():
    a = stack_name("https://alice:one@github.com/acme/infra.git", "prod")
    b = stack_name("https://bob:two@github.com/acme/infra", "/prod/")
    assert a == b


def test_long_names_are_shortened_with_a_stable_hash():
    url = "https://git.example.com/" + "/".join(f"group{i}" for i in range(20)) + "/repo.git"
    one = stack_name(url, "clusters/prod")
    two = stack_name(url, "clusters/staging")
    assert len(one) == 63 and valid_label_value(one) and LABEL_RE.match(one)
    assert one == stack_name(url, "clusters/prod")  # stable
    assert one != two  # the hash tells them apart although the kept prefix is the same
    assert one[:52] == two[:52]
    assert re.search(r"-[0-9a-f]{10}$", one)


def test_shortened_name_does_not_end_in_punctuation():
    # The cut falls right after a '-' or '.'; it must be trimmed before the hash.
    for n in range(40, 60):
        name = stack_name("https://h/" + "a" * n + "-.b" * 10)
        assert valid_label_value(name), name


def test_exactly_63_characters_kept_as_is():
    name = "a" * 63
    assert stack_name(name) == name
    assert stack_name("a" * 64) != "a" * 64 and len(stack_name("a" * 64)) == 63


@pytest.mark.parametrize("url", ["", "   ", "://", "https://user:pw@/", "---", "file:///"])
def test_nothing_left_is_an_error(url):
    with pytest.raises(ValueError):
        stack_name(url)


def test_error_does_not_leak_credentials():
    with pytest.raises(ValueError) as info:
        stack_name("https://user:Sup3rSecret@/")
    assert "Sup3rSecret" not in str(info.value)


def test_type_errors():
    with pytest.raises(TypeError):
        stack_name(None)
    with pytest.raises(TypeError):
        stack_name("https://h/r", path=3)
    assert stack_name("https://h/r", path=None) == "h-r"


@pytest.mark.parametrize("url, expected", [
    ("https://user:tok@github.com/acme/infra.git", "https://github.com/acme/infra.git"),
    ("https://tok@github.com/acme/infra.git", "https://github.com/acme/infra.git"),
    ("https://github.com/acme/infra.git", "https://github.com/acme/infra.git"),
    ("git@github.com:acme/infra.git", "github.com:acme/infra.git"),
    ("file:///srv/git/infra.git", "file:///srv/git/infra.git"),
    ("/srv/git/infra.git", "/srv/git/infra.git"),
    ("fatal: unable to access 'https://u:p@h/r.git/': 403 (see https://x:y@h/z)",
     "fatal: unable to access 'https://h/r.git/': 403 (see https://h/z)"),
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
        assert normalize_source(url, path) == ""
        return
    assert valid_label_value(name) and LABEL_RE.match(name)
    assert name == stack_name(url, path)


def test_naming_module_imports_on_its_own():
    # module_utils must not pull in controller-only code.
    code = ("import sys; sys.path.insert(0, %r); "
            "from ansible_collections.stacksync.k8s.plugins.module_utils import naming; "
            "assert 'ansible' not in sys.modules; print(naming.stack_name('git@h:o/r.git'))")
    root = __import__("ansible_collections.stacksync.k8s", fromlist=["x"]).__path__[0]
    collections_root = root.rsplit("/ansible_collections/", 1)[0]
    out = subprocess.run([sys.executable, "-c", code % collections_root], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "h-o-r"
