# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The threads of one run: API calls in parallel, at most ``concurrency`` at a time."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from concurrent.futures import ThreadPoolExecutor


class RunPool:
    """:meth:`map` runs ``fn`` on every item in up to ``concurrency`` threads, started on first use (one item, or a
    concurrency of 1, runs in the caller's thread); :meth:`close` ends them."""

    def __init__(self, concurrency):
        self.concurrency = concurrency
        self._pool = None

    def map(self, fn, items):
        items = list(items)
        if len(items) <= 1 or self.concurrency == 1:
            return [fn(i) for i in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency)
        return list(self._pool.map(fn, items))

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
