"""plugin_utils/gitcheck.py: what a source may give git, and git's errors in plain words."""

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import gitcheck as gc


@pytest.mark.parametrize("url, protocol", [
    ("https://github.com/acme/infra.git", "https"),
    ("https://user:tok@github.com/acme/infra.git", "https"),
    ("HTTPS://github.com/acme/infra.git", "https"),
    ("ssh://git@github.com:22/acme/infra.git", "ssh"),
    ("git+ssh://git@github.com/acme/infra.git", "ssh"),
    ("git@github.com:acme/infra.git", "ssh"),
    ("github.com:acme/infra.git", "ssh"),
    ("file:///srv/git/infra.git", "file"),
    ("/srv/git/infra.git", "file"),
    ("../infra", "file"),
    ("./-dash-is-fine-inside", "file"),
])
def test_allowed_transports(url, protocol):
    assert gc.repo_transport(url) == protocol


@pytest.mark.parametrize("url, refused", [
    ("", "empty"),
    ("--upload-pack=touch /tmp/x", "begins with '-'"),
    ("-u", "begins with '-'"),
    ("ext::sh -c touch% /tmp/x", "transport 'ext' (a <transport>::<address> remote helper)"),
    ("fd::7", "transport 'fd'"),
    ("http://h/x", "http:// sends the manifests"),
    ("git://h/x", "git:// is unauthenticated"),
    ("ftps://h/x", "transport 'ftps' is not allowed"),
    ("ssh://-oProxyCommand=x/r", "host or user begins with '-'"),
    ("ssh://-l@h/r", "host or user begins with '-'"),
    ("-oProxyCommand=x:r", "begins with '-'"),
    ("https://h/x\r", "control characters"),
    (" https://h/x", "spaces"),
])
def test_refused_urls_say_why(url, refused):
    with pytest.raises(ValueError) as e:
        gc.repo_transport(url)
    assert refused in str(e.value)


def test_refusals_never_show_credentials():
    for url in ("http://user:S3cret@h/x?access_token=S3cret", "ftp://user:S3cret@h/x", "https://user:S3cret@h/x\n"):
        with pytest.raises(ValueError) as e:
            gc.repo_transport(url)
        assert "S3cret" not in str(e.value) and "refused" in str(e.value)


@pytest.mark.parametrize("version", ["HEAD", "main", "release/1.2", "v1.0.0", "refs/tags/v1", "feature/x-y_z",
                                     "abc1234", "0123456789abcdef0123456789abcdef01234567", "a" * 255, "x@y", "ü"])
def test_versions_git_accepts(version):
    gc.check_version(version)


@pytest.mark.parametrize("version, why", [
    ("--upload-pack=touch /tmp/x", "begins with '-'"),
    ("-b", "begins with '-'"),
    ("+refs/heads/x:refs/heads/y", "begins with '+'"),
    ("main..evil", "'..'"),
    ("../../etc", "'..'"),
    ("HEAD@{1}", "'@{'"),
    ("a//b", "'//'"),
    ("main~1", "'~'"),
    ("x:y", "':'"),
    ("a b", "space"),
    ("a\tb", "control character"),
    ("*", "'*'"),
    ("[x]", "'['"),
    ("a\\b", "'\\\\'"),
    ("/main", "begins or ends with '/'"),
    ("main/", "begins or ends with '/'"),
    ("main.", "ends with '.'"),
    ("@", "'@'"),
    (".git/x", "begins with '.'"),
    ("x/y.lock", "'.lock'"),
    ("x" * 256, "longer than 255"),
    ("", "empty"),
])
def test_versions_refused_with_the_rule(version, why):
    with pytest.raises(ValueError) as e:
        gc.check_version(version)
    assert why in str(e.value)


# git's own output (git 2.39, curl 7.88, OpenSSH 9.2), redacted, and what it says to a person
URL = "https://git.example.com/acme/x.git"


@pytest.mark.parametrize("output, expected", [
    ("fatal: '/srv/x' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\n"
     "Please make sure you have the correct access rights\nand the repository exists.",
     f"cannot fetch {URL}: no such repository (or no access to it)"),
    ("remote: Repository not found.\nfatal: repository 'https://git.example.com/acme/x.git/' not found",
     f"cannot fetch {URL}: no such repository (or no access to it)"),
    ("fatal: couldn't find remote ref v9", f"{URL} has no branch or tag v9"),
    ("fatal: unable to access 'https://nonexistent.invalid/x.git/': Could not resolve host: nonexistent.invalid",
     f"cannot fetch {URL}: cannot reach host nonexistent.invalid: no such host (DNS)"),
    ("fatal: unable to access 'https://127.0.0.1:9/x.git/': Failed to connect to 127.0.0.1 port 9 after 0 ms: "
     "Couldn't connect to server", f"cannot fetch {URL}: cannot reach host 127.0.0.1 port 9: connection failed"),
    ("ssh: connect to host 127.0.0.1 port 9: Connection refused\nfatal: Could not read from remote repository.",
     f"cannot fetch {URL}: cannot reach host 127.0.0.1 port 9: Connection refused"),
    ("ssh: Could not resolve hostname nohost.invalid: Name or service not known\nfatal: Could not read from remote",
     f"cannot fetch {URL}: cannot reach host nohost.invalid: no such host (DNS)"),
    ("git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.",
     f"cannot fetch {URL}: authentication failed (check the credentials or SSH key for it)"),
    ("fatal: could not read Username for 'https://git.example.com': terminal prompts disabled",
     f"cannot fetch {URL}: authentication failed (check the credentials or SSH key for it)"),
    ("remote: HTTP Basic: Access denied\nfatal: Authentication failed for 'https://git.example.com/acme/x.git/'",
     f"cannot fetch {URL}: authentication failed (check the credentials or SSH key for it)"),
    ("fatal: unable to access 'https://h/x.git/': The requested URL returned error: 403",
     f"cannot fetch {URL}: authentication failed (check the credentials or SSH key for it)"),
    ("Host key verification failed.\nfatal: Could not read from remote repository.",
     f"cannot fetch {URL}: the SSH host key is unknown or changed (check known_hosts)"),
    ("fatal: unable to access 'https://h/x.git/': SSL certificate problem: self-signed certificate",
     f"cannot fetch {URL}: the server's TLS certificate is not trusted (SSL certificate problem: self-signed "
     "certificate)"),
    ("fatal: transport 'http' not allowed", f"cannot fetch {URL}: git refused transport 'http' (allowed: https, ssh, file)"),
    ("error: something new\nfatal: the remote end hung up", f"cannot fetch {URL}: git failed: error: something new; "
     "fatal: the remote end hung up"),
])
def test_git_errors_in_plain_words(output, expected):
    assert gc.plain_error(output, URL, "v9") == expected
