"""A second name for this package's modules, for the checkout's rounds 1-6 name ``shared``.

:func:`alias_package` makes ``import old`` and ``import old.x.y`` return the modules of ``new``
themselves (never a second copy, which would split class identities, caches and test patches
between the two names). Installed wheels never call it: nothing named ``shared`` is installed.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target
        self.target_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.target_spec = module.__spec__
        return module

    def get_code(self, fullname: str) -> object:
        """The target's code, for ``python -m old.module`` (runpy runs it as ``__main__``)."""
        spec = importlib.util.find_spec(self.target)
        return spec.loader.get_code(self.target)  # type: ignore[union-attr]

    def exec_module(self, module: ModuleType) -> None:
        """The target module ran when it was imported (running it again would reset it); the
        import system gave it the alias's spec, so it gets its own back (importlib.resources and
        reloads read it)."""
        module.__spec__ = self.target_spec


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``old.x.y`` as the module ``new.x.y``. ``old.__main__`` is left to the path finder,
    so ``python -m old`` runs (its relative imports then resolve through this finder)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(self.old + ".") or fullname == self.old + ".__main__":
            return None
        target_name = self.new + fullname[len(self.old):]
        if importlib.util.find_spec(target_name) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name))


def alias_package(old: str, new: str) -> None:
    """Serve package ``new`` under the name ``old`` as well (idempotent)."""
    package = importlib.import_module(new)
    sys.modules[old] = package
    if not any(isinstance(f, AliasFinder) and f.old == old for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder(old, new))
