"""What a metric script says about its metric, declared once (``ABOUT``): the text and links
evaluate shows in ``MetricInfo`` and appends to ``compute``'s docstring."""

from __future__ import annotations

from dataclasses import dataclass

VALOR_URL = "https://github.com/Striveworks/valor"


@dataclass(frozen=True)
class About:
    """``description``: what the metric measures (its card's formula in words);
    ``arguments``: the ``Args:``/``Returns:``/``Examples:`` text of ``compute`` (the declared
    options' lines are added to it); ``citation``: BibTeX (:mod:`.citations`)."""

    description: str
    arguments: str
    citation: str
    reference_urls: tuple[str, ...] = (VALOR_URL,)
    homepage: str = ""
    codebase_urls: tuple[str, ...] = ()
