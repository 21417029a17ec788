"""Unit tests of the docs tooling: the extra docs generated from docs/*.md and the offline inventory."""

import zlib

import pytest

from tests.tools import docs_inventory, docsite

NAMES = {"awx", "scale-out"}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("scale-out.md", ("ref", "ansible_collections.stacksync.k8s.docsite.scale_out")),
        ("https://example.com/x.md", ("url", "https://example.com/x.md")),
        ("#forks", ("url", "#forks")),
        ("../tests/bench/README.md", ("url", docsite.REPO_URL + "tests/bench/README.md")),
        ("dev/CONTRACTS.md#prune", ("url", docsite.REPO_URL + "docs/dev/CONTRACTS.md#prune")),
        ("other.md", ("url", docsite.REPO_URL + "docs/other.md")),  # not a guide: the file on GitHub
    ],
)
def test_rewrite_target(target, expected):
    assert docsite.rewrite_target(target, NAMES) == expected


def test_convert_labels_the_page_and_links_guides_by_label():
    md = "# AWX\n\n## 1. Build\n\nSee [scaling out](scale-out.md) and [the bench](../tests/bench/run.py).\n\n| a | b |\n| --- | --- |\n| `x` | y |\n"
    rst = docsite.convert(md, "awx", NAMES)
    assert ".. _ansible_collections.stacksync.k8s.docsite.awx:" in rst
    assert ":ref:`scaling out <ansible_collections.stacksync.k8s.docsite.scale_out>`" in rst
    assert docsite.REPO_URL + "tests/bench/run.py" in rst
    assert "AWX\n===" in rst and "1. Build\n--------" in rst
    assert ".. _1-build" not in rst and ".. _awx:" not in rst  # no GitHub-style anchors (wrong prefix for antsibull-docs)
    assert "``x``" in rst


def test_build_writes_one_page_per_guide_and_removes_stale_ones(tmp_path):
    docs, out = tmp_path / "docs", tmp_path / "docs" / "docsite" / "rst"
    docs.mkdir()
    (docs / "awx.md").write_text("# AWX\n\ntext\n")
    out.mkdir(parents=True)
    (out / "gone.rst").write_text("old")
    pages = docsite.build(out, docs)
    assert sorted(p.name for p in pages) == ["awx.rst"]
    assert sorted(p.name for p in out.iterdir()) == ["awx.rst"]


def test_unlisted_guides():
    extra = {"sections": [{"title": "Guides", "toctree": ["awx", "scale-out"]}, {"title": "More", "toctree": ["health"]}]}
    assert docsite.unlisted(extra, ["awx", "health", "performance", "scale-out"]) == ["performance"]
    assert docsite.unlisted(None, ["awx"]) == ["awx"]


def test_referenced_labels():
    text = "See :ref:`the module <ansible_collections.ansible.builtin.git_module>` and :ref:`common_return_values`."
    assert docs_inventory.referenced_labels([text]) == {"ansible_collections.ansible.builtin.git_module", "common_return_values"}


def test_inventory_points_at_docs_ansible_com_and_skips_own_labels():
    data = docs_inventory.inventory({
        "ansible_collections.ansible.builtin.git_module", "common_return_values",
        "ansible_collections.stacksync.k8s.stack_module",
    })
    header, _, body = data.partition(b"zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2\n")
    lines = zlib.decompress(body).decode().splitlines()
    assert lines == [
        "ansible_collections.ansible.builtin.git_module std:label -1 collections/ansible/builtin/git_module.html ansible.builtin.git module",
        "common_return_values std:label -1 reference_appendices/common_return_values.html Return Values",
    ]


def test_inventory_refuses_unknown_labels():
    with pytest.raises(ValueError, match="no_such_label"):
        docs_inventory.inventory({"no_such_label"})
