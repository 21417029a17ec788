# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Object identity: API group, kind, namespace, name. Pure functions, no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
from collections import namedtuple

#: hex digits of :func:`identity_digest` (64 bits: no collision among millions of objects)
DIGEST_LENGTH = 16


class ObjectId(namedtuple("ObjectId", ["group", "kind", "namespace", "name"])):
    """Identity of a Kubernetes object. ``namespace`` is ``""`` for cluster-scoped objects.

    The API *group* (not the version) is part of the identity: ``apps/v1`` and
    ``apps/v1beta1`` Deployments are one object.
    """

    __slots__ = ()

    def __str__(self):
        gk = self.kind + ("." + self.group if self.group else "")
        if self.namespace:
            return "%s %s/%s" % (gk, self.namespace, self.name)
        return "%s %s" % (gk, self.name)

    @property
    def group_kind(self):
        return (self.group, self.kind)


def split_api_version(api_version):
    """Return ``(group, version)`` of an ``apiVersion`` string; the core group is ``""``."""
    if not isinstance(api_version, str) or not api_version:
        raise ValueError("apiVersion must be a non-empty string, got %r" % (api_version,))
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


def group_of(api_version):
    """API group of an ``apiVersion`` (``"apps/v1"`` -> ``"apps"``, ``"v1"`` -> ``""``)."""
    return split_api_version(api_version)[0]


def group_kind_str(group, kind):
    """``Kind.group`` as kubectl and ApplySet write it (``Deployment.apps``, ``ConfigMap``)."""
    return kind + ("." + group if group else "")


def parse_group_kind(text):
    """Inverse of :func:`group_kind_str`."""
    kind, _sep, group = text.partition(".")
    return group, kind


def identity_digest(oid):
    """Short SHA-256 of an identity: what a stack's record lists for each object it declares."""
    text = "\n".join([oid.group, oid.kind, oid.namespace, oid.name])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_LENGTH]
