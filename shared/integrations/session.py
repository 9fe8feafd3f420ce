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
# the credentials the running test's assertions were given (or their judges read from the
# environment): the plugin masks them in the test's report (terminal and JUnit XML)
SECRETS: set[str] = set()
# how many assert_metric the running test has made (its JUnit properties are numbered)
COUNT: list[int] = [0]


def record(properties: list[tuple[str, object]]) -> None:
    """Append ``properties`` to the running test's JUnit properties (nothing outside pytest);
    the second assertion of a test records ``metric[2]``, ``value[2]``..., so every property
    of a test is unique."""
    target = CURRENT[0]
    if target is None:
        return
    COUNT[0] += 1
    suffix = "" if COUNT[0] == 1 else f"[{COUNT[0]}]"
    target.extend((f"{name}{suffix}", value) for name, value in properties)
