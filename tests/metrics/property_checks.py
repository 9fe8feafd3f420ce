"""What the metrics' hypothesis tests share: their settings, and rows of (prediction, reference)
texts for the metrics that compare a prediction with one reference text."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def examples(count: int) -> settings:
    """``count`` examples, no deadline (the machine is shared), and the metric a module loads
    once given to every example (hypothesis warns about fixtures it does not reset)."""
    return settings(max_examples=count, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def text_pairs(max_size: int, max_rows: int,
               alphabet: str | None = None) -> st.SearchStrategy[list[tuple[str, str]]]:
    """1 to ``max_rows`` rows of (prediction, reference): any prediction, and a reference that is
    not blank (a blank reference is an input error); each text at most ``max_size`` characters,
    drawn from ``alphabet`` when one is given."""
    def text(min_size: int = 0) -> st.SearchStrategy[str]:
        if alphabet is None:
            return st.text(min_size=min_size, max_size=max_size)
        return st.text(alphabet, min_size=min_size, max_size=max_size)

    return st.lists(st.tuples(text(), text(min_size=1).filter(str.strip)),
                    min_size=1, max_size=max_rows)


def columns(pairs: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The predictions and the references of ``pairs``."""
    predictions, references = map(list, zip(*pairs, strict=True))
    return predictions, references
