# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Metadata keys stacksync.k8s writes and reads. One place, so docs and code agree."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOMAIN = "stacksync.io"

#: Label naming the stack an object belongs to (a valid label value, <= 63 chars).
STACK_LABEL = DOMAIN + "/stack"
#: Annotation: checksum of the object's own desired manifest ("sha256:<hex>", keyed for Secrets).
CHECKSUM_ANNOTATION = DOMAIN + "/checksum"
#: Annotation: ownership mark derived from the stack name *and* the object's identity.
OWNER_ANNOTATION = DOMAIN + "/owner"
#: Annotation: opt-out; an object carrying ``"true"`` is neither applied nor pruned.
IGNORE_ANNOTATION = DOMAIN + "/ignore"
#: Annotation: ``disabled`` -- applied while in git, never deleted once removed from it (Flux's
#: ``kustomize.toolkit.fluxcd.io/prune: disabled``).
PRUNE_ANNOTATION = DOMAIN + "/prune"
#: Annotation: how the object is applied -- ``merge`` (others' fields are kept, nothing is taken
#: over) or ``if-not-present`` (created when missing, never changed after: bootstrap Secrets).
SSA_ANNOTATION = DOMAIN + "/ssa"
#: Annotation: delete and recreate the object when an apply hits an immutable field.
RECREATE_ANNOTATION = DOMAIN + "/recreate-on-immutable"
#: Annotation the manifests lookup sets to say where a manifest came from ("path#document").
#: The stack module strips it before applying, so it never reaches the cluster.
SOURCE_ANNOTATION = DOMAIN + "/source"
#: Label on the per-stack record object (value: the stack name).
RECORD_LABEL = DOMAIN + "/record-of"
#: Annotation: the record namespace of the stack that applied the object (two stacks of one name whose
#: records live in different namespaces label their objects alike; this tells them apart).
RECORD_NAMESPACE_ANNOTATION = DOMAIN + "/record-namespace"

#: Annotation: the API server's time an object that left git was marked for pruning (``prune_grace``), rounded up
#: to the second; ``pending`` while the second write that stamps it has not happened (see .grace).
PRUNE_MARK_ANNOTATION = DOMAIN + "/prune-marked-at"

DEFAULT_FIELD_MANAGER = "stacksync"
#: Our own metadata, stamped on every object and left out of its checksum.
STAMPED_KEYS = (STACK_LABEL, CHECKSUM_ANNOTATION, OWNER_ANNOTATION, SOURCE_ANNOTATION, RECORD_NAMESPACE_ANNOTATION)
