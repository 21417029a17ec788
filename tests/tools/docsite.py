"""Turn the guides in ``docs/*.md`` into the collection's extra docs (``docs/docsite/rst/*.rst``).

antsibull-docs (the docs site of every collection on docs.ansible.com) reads extra docs as
reStructuredText only, and the guides are written in Markdown for GitHub. ``make build`` runs this
before building the tarball, so the extra docs always match the Markdown (they are not committed):

    python -m tests.tools.docsite            # write the pages
    python -m tests.tools.docsite --check    # also fail when a guide is missing from extra-docs.yml

Each page gets the label antsibull-docs requires (``ansible_collections.stacksync.k8s.docsite.<name>``);
links between guides become ``:ref:`` links, links to other files of the repository point at it on
GitHub. Conversion with pandoc (PyPI package ``pypandoc-binary``); Markdown as GitHub renders it.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
OUT = DOCS / "docsite" / "rst"
REPO_URL = "https://github.com/stacksync/stacksync.k8s/blob/main/"
LABEL = "ansible_collections.stacksync.k8s.docsite.{}"


def guides(docs=DOCS):
    """The Markdown guides: ``docs/*.md`` (not ``docs/dev``, which is for developers), by name."""
    return sorted(docs.glob("*.md"))


def label(stem):
    return LABEL.format(stem.replace("-", "_"))


def _text(inlines):
    """Plain text of pandoc inline elements (for a link's title)."""
    out = []
    for node in inlines:
        kind = node["t"]
        if kind == "Str":
            out.append(node["c"])
        elif kind in ("Space", "SoftBreak", "LineBreak"):
            out.append(" ")
        elif kind == "Code":
            out.append(node["c"][1])
        elif kind in ("Emph", "Strong", "Strikeout", "Underline", "SmallCaps"):
            out.append(_text(node["c"]))
        elif kind == "Link":
            out.append(_text(node["c"][1]))
    return "".join(out)


def rewrite_target(target, names):
    """Where a link of a guide should point in the docs site.

    Returns ``("ref", label)`` for another guide, ``("url", url)`` otherwise (unchanged for absolute
    URLs and in-page anchors, the file on GitHub for other repository paths).
    """
    if "://" in target or target.startswith(("#", "mailto:")):
        return "url", target
    path, _, anchor = target.partition("#")
    stem = Path(path).stem
    if path.endswith(".md") and "/" not in path and stem in names:
        return "ref", label(stem)
    parts = []
    for part in ("docs/" + path).split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "url", REPO_URL + "/".join(parts) + ("#" + anchor if anchor else "")


def _walk(node, names):
    """Rewrite the Link elements of a pandoc JSON AST in place and drop the headings' identifiers."""
    if isinstance(node, list):
        for i, child in enumerate(node):
            if isinstance(child, dict) and child.get("t") == "Header":
                child["c"][1][0] = ""  # no GitHub-style anchors: labels must carry the collection's prefix
            if isinstance(child, dict) and child.get("t") == "Link":
                _attr, inlines, (target, title) = child["c"]
                kind, where = rewrite_target(target, names)
                if kind == "ref":
                    text = _text(inlines).replace("<", "\\<").replace("`", "\\`")
                    node[i] = {"t": "RawInline", "c": ["rst", f":ref:`{text} <{where}>`"]}
                    continue
                child["c"][2] = [where, title]
            _walk(child, names)
    elif isinstance(node, dict):
        for value in node.values():
            if isinstance(value, (list, dict)):
                _walk(value, names)


def convert(markdown, stem, names):
    """The reStructuredText page for one guide."""
    import pypandoc

    ast = json.loads(pypandoc.convert_text(markdown, "json", format="gfm"))
    _walk(ast["blocks"], names)
    body = pypandoc.convert_text(json.dumps(ast), "rst", format="json", extra_args=["--wrap=preserve"])
    header = (f".. Generated from docs/{stem}.md by tests/tools/docsite.py (make build): edit the Markdown.\n\n"
              f".. _{label(stem)}:\n\n")
    return header + body


def unlisted(extra_docs, names):
    """Guides (by name) that no toctree of ``extra_docs`` (the parsed extra-docs.yml) lists."""
    listed = {entry for section in (extra_docs or {}).get("sections") or [] for entry in section.get("toctree") or []}
    return sorted(set(names) - listed)


def build(out=OUT, docs=DOCS):
    """Write every guide's page; returns {path: text}."""
    names = {p.stem for p in guides(docs)}
    pages = {out / (p.stem + ".rst"): convert(p.read_text(), p.stem, names) for p in guides(docs)}
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.rst"):
        if stale not in pages:
            stale.unlink()
    for path, text in pages.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return pages


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="fail when a guide is missing from docs/docsite/extra-docs.yml")
    args = p.parse_args(argv)
    pages = build()
    print(f"docsite: {len(pages)} extra docs in {OUT.relative_to(ROOT)}")
    if args.check:
        import yaml

        missing = unlisted(yaml.safe_load((DOCS / "docsite" / "extra-docs.yml").read_text()), [p.stem for p in pages])
        if missing:
            print(f"docsite: add {', '.join(missing)} to a toctree of docs/docsite/extra-docs.yml (docs/*.md are the "
                  "docs site's guides; a page in no toctree fails `make docs`)", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
