"""Benchmark of stacksync.k8s against kubernetes.core and kubectl (issue 7): ``python -m tests.bench``.

Not part of the test suite: ``make bench`` runs it (``N=5000`` for the large run).
"""
