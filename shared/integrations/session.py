"""What a pytest session sets for every ``assert_metric`` in it (the plugin's options) and where
the assertion running now records its JUnit properties. Standard library only: the pytest
plugin imports this at load."""

from __future__ import annotations

from typing import Any

# judge options from --judge-provider, --judge-model, --judge-base-url (option name -> value)
JUDGE: dict[str, Any] = {}
# --max-unmeasured: None (no limit) or a fraction
LIMITS: dict[str, Any] = {"max_unmeasured": None}
# the running test's user_properties (what record_property appends to); None outside a test
CURRENT: list[list[tuple[str, object]] | None] = [None]


def record(properties: list[tuple[str, object]]) -> None:
    """Append ``properties`` to the running test's JUnit properties (nothing outside pytest)."""
    target = CURRENT[0]
    if target is not None:
        target.extend(properties)
