# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decoding the API server's answers: with `orjson <https://pypi.org/project/orjson/>`_ when it is installed
(``requirements.txt``), else with the standard library's ``json``.

Decoding the lists of a 10,000-object stack is about a fifth of the CPU of a no-op resync; orjson builds the same
objects in 50-65% of the time. What orjson refuses -- ``NaN`` and ``Infinity``, numbers beyond a double's range,
lone surrogates, a byte-order mark, invalid JSON or UTF-8 -- is decoded by ``json`` as it would be without orjson
(invalid input raises the ``ValueError`` that ``json`` raises). The one value the two decode differently is an
integer below ``-2**63`` or above ``2**64 - 1``: a float for orjson, an ``int`` for ``json``. kube-apiserver writes
such an integer only for a number it holds as a float64 (a custom resource's ``2**64`` comes back as
``18446744073709552000``, which orjson decodes to the float ``2.0**64``, equal to the manifest's ``2**64`` in
Python). Only the server's answers are decoded here: what this collection writes itself (the kept render, the memos,
the checksums) keeps the standard library's encoding and decoding, whatever is installed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

try:
    import orjson
except ImportError:  # optional: the standard library decodes the same
    orjson = None


def loads(data):
    """``json.loads(data)`` (``data``: ``bytes`` or ``str``), by orjson when it is installed and accepts it."""
    if orjson is not None:
        try:
            return orjson.loads(data)
        except ValueError:  # orjson.JSONDecodeError: json decides, and raises its own error
            pass
    return json.loads(data)
