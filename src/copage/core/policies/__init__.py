"""Eviction policies: each one only chooses the victim; the cache keeps the books.

Names: fifo, lru, lfu, belady (offline, needs ``future=``), lrfu (``lam=``),
adaptive (``threshold=``), query (``k1=``, ``b=``). Modules are imported only
when their policy is built.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable

from copage.core.policies.policy import EvictionPolicy, History, Limit
from copage.core.registry import Registry, UnknownNameError, check_options

__all__ = [
    "POLICIES",
    "EvictionPolicy",
    "History",
    "Limit",
    "UnknownNameError",
    "get_policy",
]

POLICIES: Registry[EvictionPolicy] = Registry("policy")

_CLASSES = {
    "fifo": ("fifo", "FIFOPolicy"),
    "lru": ("lru", "LRUPolicy"),
    "lfu": ("lfu", "LFUPolicy"),
    "belady": ("belady", "BeladyPolicy"),
    "lrfu": ("lrfu", "LRFUPolicy"),
    "adaptive": ("adaptive", "AdaptivePolicy"),
    "query": ("query", "QueryPolicy"),
}


def _lazy(name: str, module: str, cls_name: str) -> Callable[..., EvictionPolicy]:
    def factory(**options: object) -> EvictionPolicy:
        cls = getattr(importlib.import_module(f"copage.core.policies.{module}"), cls_name)
        params = inspect.signature(cls).parameters
        check_options(f"policy {name!r}", options, list(params))
        policy: EvictionPolicy = cls(**options)
        return policy

    return factory


for _name, (_module, _cls) in _CLASSES.items():
    POLICIES.register(_name, _lazy(_name, _module, _cls))


def get_policy(name: str, **options: object) -> EvictionPolicy:
    """Build the policy ``name`` (raises UnknownNameError listing the valid names)."""
    return POLICIES.create(name, **options)
