"""A provider's backend class, found from its registry entry's ``module:Class`` and imported at
first use: what the pool builds backends from (:mod:`.pool`) and what the configuration asks to
check a judge's environment (:meth:`.base.Backend.check_config`) before any request."""

from __future__ import annotations

import importlib

from .registry import PROVIDERS

__all__ = ["backend_class"]


def backend_class(provider: str) -> type:
    """The backend class of ``provider`` (a :class:`~.base.Backend`), imported now."""
    module, name = PROVIDERS[provider].backend.split(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)
