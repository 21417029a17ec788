"""Test-only helper: a module's documented options (its DOCUMENTATION with the collection's doc fragments merged in,
as ansible-doc merges them) compared with an argument spec, option by option."""

import importlib

import yaml

FRAGMENTS = "ansible_collections.stacksync.k8s.plugins.doc_fragments."


def documented_options(module):
    """``{option: documentation}`` of ``module`` (an imported module file), fragments of stacksync.k8s included."""
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = dict(doc.get("options") or {})
    for fragment in doc.get("extends_documentation_fragment") or []:
        if fragment.startswith("stacksync.k8s."):
            name, _sep, variant = fragment[len("stacksync.k8s."):].partition(".")
            holder = importlib.import_module(FRAGMENTS + name).ModuleDocFragment
            options.update(yaml.safe_load(getattr(holder, variant.upper() or "DOCUMENTATION")).get("options") or {})
    return options


def _comparable(entry):
    return {"type": entry.get("type", "str"), "default": entry.get("default"), "required": bool(entry.get("required")),
            "elements": entry.get("elements"), "choices": sorted(entry.get("choices") or [])}


def differences(options, spec):
    """``[(option, what differs)]`` between documented ``options`` and an argument ``spec`` (suboptions too)."""
    found = [(name, "documented only") for name in sorted(set(options) - set(spec))]
    found += [(name, "in the spec only") for name in sorted(set(spec) - set(options))]
    for name in sorted(set(options) & set(spec)):
        doc, arg = _comparable(options[name]), _comparable(spec[name])
        for key in doc:
            if doc[key] != arg[key]:
                found.append((name, f"{key}: documented {doc[key]!r}, spec {arg[key]!r}"))
        if options[name].get("suboptions") or spec[name].get("options"):
            found += [(f"{name}.{sub}", why) for sub, why in
                      differences(options[name].get("suboptions") or {}, spec[name].get("options") or {})]
    return found
