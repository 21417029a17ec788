"""An offline Sphinx inventory (``objects.inv``) for the Ansible docs labels the collection's docs refer to.

The docs site built by antsibull-docs links to ansible-core's documentation (``ansible.builtin``
modules, the configuration and return-value references) through intersphinx, which downloads the
inventory of docs.ansible.com. ``make docs`` runs offline, so this writes an inventory holding just
the labels that the generated pages use, each pointing where docs.ansible.com serves it; a label it
does not know fails the build instead of leaving a dead link.

    python -m tests.tools.docs_inventory RST_DIR OUTPUT.inv
"""

import re
import sys
import zlib
from pathlib import Path

BASE = "https://docs.ansible.com/projects/ansible/devel/"
OWN_PREFIX = "ansible_collections.stacksync.k8s."

#: labels of ansible-core's documentation (not collection pages) -> (page, title)
CORE_LABELS = {
    "action_plugins": ("plugins/action.html", "Action plugins"),
    "ansible_configuration_settings": ("reference_appendices/config.html", "Ansible Configuration Settings"),
    "common_return_values": ("reference_appendices/common_return_values.html", "Return Values"),
    "list_of_collections": ("collections/index.html", "Collection Index"),
}

_COLLECTION_PLUGIN = re.compile(r"^ansible_collections\.([a-z0-9_]+)\.([a-z0-9_]+)\.([a-z0-9_]+)_([a-z]+)$")
_REF = re.compile(r":ref:`(?:[^`<]*<([^>`]+)>|([^`<]+))`")


def referenced_labels(texts):
    """Labels used by ``:ref:`` roles in reStructuredText ``texts`` (``:ref:`label``` and ``:ref:`title <label>```)."""
    labels = set()
    for text in texts:
        for m in _REF.finditer(text):
            labels.add((m.group(1) or m.group(2)).strip())
    return labels


def location(label):
    """(relative URL, title) of an external label on docs.ansible.com, or None when unknown."""
    if label in CORE_LABELS:
        return CORE_LABELS[label]
    m = _COLLECTION_PLUGIN.match(label)
    if m:
        ns, coll, name, kind = m.groups()
        return f"collections/{ns}/{coll}/{name}_{kind}.html", f"{ns}.{coll}.{name} {kind}"
    return None


def inventory(labels):
    """The bytes of a Sphinx v2 inventory for ``labels`` (external ones only); raises on unknown labels."""
    lines, unknown = [], []
    for label in sorted(labels):
        if label.startswith(OWN_PREFIX):
            continue
        where = location(label)
        if where is None:
            unknown.append(label)
            continue
        lines.append(f"{label} std:label -1 {where[0]} {where[1]}\n")
    if unknown:
        raise ValueError("no docs.ansible.com location known for: " + ", ".join(unknown))
    header = (b"# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n"
              b"# The remainder of this file is compressed using zlib.\n")
    return header + zlib.compress("".join(lines).encode())


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    rst_dir, output = Path(argv[0]), Path(argv[1])
    labels = referenced_labels(p.read_text() for p in rst_dir.rglob("*.rst"))
    try:
        data = inventory(labels)
    except ValueError as e:
        print(f"docs_inventory: {e}", file=sys.stderr)
        return 1
    output.write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
