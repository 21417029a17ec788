"""A Kubernetes API simulator for tests and the demo (see README.md)."""

from .authz import DenyRule
from .simulator import Faults, Simulator

__all__ = ["DenyRule", "Faults", "Simulator"]
