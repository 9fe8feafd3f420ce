"""Grounding checks: a judge answer is about the input, not text copied from the prompt.

A schema-valid answer can still be useless: a weak judge copies the prompt's format example
("Paris is the capital of France."), blends it with the input ("Paris is the capital of
Australia."), or returns the placeholder reason ("short reason") for every verdict. These checks
run in the engine (``Judge.structured(..., checks=...)``) on every backend's answers, before an
answer is cached or turned into a number. See docs/GROUNDING.md for the rule and its constants.

The lexical-support rule, for one extracted item (a statement, claim or opinion) and its source
(the text it was extracted from, plus the question when the judge was shown one):

1. normalise both (Unicode NFKC, accents dropped, lower case, ``2,000`` -> ``2000``), split into
   words, keep the *content words* (not in :data:`STOPWORDS`; digits always kept) and reduce
   each to a crude stem (one suffix of ``ing ed es s ly`` dropped, first 6 letters kept);
2. the item is **supported** when every number it holds occurs in the source and at least
   :data:`SUPPORT_MIN` (two thirds) of its content-word stems occur in the source;
3. an item equal or near-equal (:data:`NEAR_COPY_RATIO`) to any example text of the prompt is a
   **copy**, whatever the source says; so is an unsupported item whose missing words come from
   an example sentence of the prompt (a blend of the example and the input).

An extraction answer is invalid when any item is a copy or when fewer than half of its items are
supported; otherwise its unsupported items are dropped (counted in the row's details). A verdict
answer is invalid when a reason is (near-)equal to a format placeholder or example of the prompt,
or when its verdicts do not match the items asked about (:func:`verdicts_check`): verdict ``k``
must echo ``"item": k`` (one verdict per item, in order), and its reason must not be about
another item of the list (:func:`reason_about_other_item`).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...engine.answers import Unrepairable
from ..invalid_answers import COPIED, EMPTY, MISMATCH, PLACEHOLDER, UNSUPPORTED

SUPPORT_MIN = 2 / 3
"""Share of an item's content words the source must hold: at most one word in three may be new
(a connecting verb, a synonym), so a blend of two texts, about half each, fails."""

NEAR_COPY_RATIO = 0.8
"""Word-sequence similarity (difflib ratio, 2*matches/total) at or above which an item counts
as a copy of an example: one word changed in a sentence of five or more words."""

MISMATCH_MIN_WORDS = 2
"""A reason is about another item of its list when it shares none of its own item's content
words and at least this many content words that only that other item holds (not its own item,
not the rest of the prompt): one shared word can be chance (a topic word), two of another item's
own words and none of its own say the reason describes that other item."""

MAX_QUOTED = 3  # items quoted in a failure reason

STOPWORDS = frozenset("""
a an the this that these those there here it its it's itself they them their theirs he him his
she her hers we us our ours you your yours i me my mine who whom whose which what when where why
how is are was were be been being am do does did done doing have has had having will would shall
should can could may might must of in on at by for with about from to into onto over under as
than then so such and or but nor not no yes if also too very just only both either neither each
every all any some more most other another same own one ones s t
""".split())

_WORD = re.compile(r"[^\W_]+(?:[.,'’][^\W_]+)*")
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3}\b)")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` after NFKC, accent removal and ``2,000`` -> ``2000``."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", str(text)))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    return [w.rstrip(".,'’") for w in _WORD.findall(_DIGIT_COMMA.sub("", text))]


def _is_number(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


def stem(word: str) -> str:
    """A crude stem: numbers as they are; else one common suffix dropped, first 6 letters."""
    if _is_number(word):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:6]


def content_stems(text: str) -> list[str]:
    """Stems of the content words of ``text`` (stopwords and one-letter words dropped)."""
    return [stem(w) for w in words(text)
            if _is_number(w) or (len(w) > 1 and w not in STOPWORDS)]


def support(item: str, source: str, context: str = "") -> float:
    """Share of ``item``'s content words found in ``source`` or ``context`` (1.0 when the item
    has no content word and all its words occur there; else 0.0)."""
    known = set(content_stems(source)) | set(content_stems(context))
    stems = content_stems(item)
    if not stems:
        every = set(words(source)) | set(words(context))
        return 1.0 if words(item) and set(words(item)) <= every else 0.0
    return sum(s in known for s in stems) / len(stems)


def missing_words(item: str, source: str, context: str = "") -> list[str]:
    """The content stems of ``item`` that ``source`` and ``context`` do not hold."""
    known = set(content_stems(source)) | set(content_stems(context))
    return [s for s in content_stems(item) if s not in known]


def is_supported(item: str, source: str, context: str = "") -> bool:
    """The lexical-support rule: every number of the item occurs in the source and at least
    :data:`SUPPORT_MIN` of its content words do."""
    known = set(content_stems(source)) | set(content_stems(context))
    if any(s not in known for s in content_stems(item) if _is_number(s)):
        return False
    return support(item, source, context) >= SUPPORT_MIN - 1e-9


def copied_example(item: str, examples: Iterable[str]) -> str | None:
    """The example text of the prompt that ``item`` equals or nearly equals, else ``None``."""
    mine = words(item)
    if not mine:
        return None
    for example in examples:
        theirs = words(example)
        if theirs and difflib.SequenceMatcher(None, mine, theirs).ratio() >= NEAR_COPY_RATIO:
            return example
    return None


def _is_placeholder(example: str) -> bool:
    return example.strip().startswith("<")


def blended_example(item: str, source: str, context: str, examples: Iterable[str]) -> str | None:
    """The example sentence that supplies words of an unsupported ``item``, else ``None``."""
    missing = set(missing_words(item, source, context))
    for example in examples:
        if not _is_placeholder(example) and missing & set(content_stems(example)):
            return example
    return None


def _quote(texts: Sequence[str]) -> str:
    shown = ", ".join(repr(t) for t in texts[:MAX_QUOTED])
    return shown + (f" and {len(texts) - MAX_QUOTED} more" if len(texts) > MAX_QUOTED else "")


@dataclass
class ItemReport:
    """The grounding of one extraction answer: the items kept, dropped and copied."""

    kept: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    copies: list[tuple[str, str]] = field(default_factory=list)  # (item, example)

    @property
    def reason(self) -> str | None:
        """Why the whole answer is invalid, or ``None`` when it is usable."""
        if self.copies:
            pairs = [f"{item!r} (example {example!r})" for item, example in self.copies]
            return f"{COPIED}: " + ", ".join(pairs[:MAX_QUOTED])
        if len(self.unsupported) > len(self.kept):
            return (f"{len(self.unsupported)} of {len(self.unsupported) + len(self.kept)} "
                    f"items {UNSUPPORTED}: {_quote(self.unsupported)}")
        return None


def ground_items(items: Sequence[str], source: str, context: str = "",
                 examples: Sequence[str] = ()) -> ItemReport:
    """Sort extracted ``items`` into kept (supported), unsupported and copies of examples."""
    report = ItemReport()
    for item in items:
        example = copied_example(item, examples)
        if example is None and not is_supported(item, source, context):
            example = blended_example(item, source, context, examples)
            if example is None:
                report.unsupported.append(item)
                continue
        if example is not None:
            report.copies.append((item, example))
        else:
            report.kept.append(item)
    return report


def extraction_check(key: str, source: str, context: str = "", examples: Sequence[str] = (),
                     require_items: bool = False) -> Callable[[Any], str | None]:
    """A runner check for ``{key: [item, ...]}`` extracted from ``source``; with
    ``require_items`` (statements: every text has one) an empty list of a text with words is
    invalid too, and not repaired (:class:`~shared.engine.answers.Unrepairable`)."""

    def check(value: Any) -> str | None:
        items = [" ".join(str(i).split()) for i in value.get(key, [])]
        items = [i for i in items if i]
        if require_items and not items and words(source):
            return Unrepairable(f"{EMPTY} ({key})")
        return ground_items(items, source, context, examples).reason

    return check


def reasons_check(paths: Sequence[str], placeholders: Sequence[str]
                  ) -> Callable[[Any], str | None]:
    """A runner check that no reason is (near-)equal to a placeholder or example of the prompt.
    ``paths``: the keys of the answer holding verdict lists (``"verdicts"``), or ``""`` for an
    answer with one top-level ``"reason"``."""

    def check(value: Any) -> str | None:
        reasons: list[tuple[str, str]] = []
        for path in paths:
            if path == "":
                reasons.append(("reason", str(value.get("reason", ""))))
            else:
                for n, verdict in enumerate(value.get(path, []), start=1):
                    reasons.append((f"{path} {n}", str(verdict.get("reason", ""))))
        copied = [(where, copied_example(reason, placeholders)) for where, reason in reasons]
        copied = [(where, example) for where, example in copied if example is not None]
        if not copied:
            return None
        where = ", ".join(w for w, _ in copied[:MAX_QUOTED])
        more = f" and {len(copied) - MAX_QUOTED} more" if len(copied) > MAX_QUOTED else ""
        return f"{PLACEHOLDER} {copied[0][1]!r} as the reason ({where}{more})"

    return check


def reason_about_other_item(reason: str, index: int, items: Sequence[str],
                            shown: str = "") -> int | None:
    """The index of the item of ``items`` that the reason for ``items[index]`` is about instead
    of its own, else ``None``. Only positive evidence counts (:data:`MISMATCH_MIN_WORDS`): a
    reason sharing a content word with its own item, or none with any other item ("not
    biased"), is never a mismatch; words of ``shown`` (the rest of the prompt: the question,
    the contexts, the other list) may be cited by any reason and prove nothing."""
    said = set(content_stems(reason))
    own = set(content_stems(items[index]))
    if not said or said & own:
        return None
    common = own | set(content_stems(shown))
    for other, item in enumerate(items):
        if other != index and len(said & (set(content_stems(item)) - common)) >= \
                MISMATCH_MIN_WORDS:
            return other
    return None


def verdict_mismatch(verdicts: Sequence[Any], items: Sequence[str], shown: str = "",
                     path: str = "verdicts") -> str | None:
    """Why the verdict list ``verdicts`` does not match ``items`` (the items asked about, in
    order), else ``None``: not one verdict per item, a verdict whose ``"item"`` is not its
    position (1-based), or a reason about another item of the list."""
    if len(verdicts) != len(items):
        return f"{MISMATCH} ({path}: {len(verdicts)} verdicts for {len(items)} items)"
    for number, verdict in enumerate(verdicts, start=1):
        echo = verdict.get("item") if isinstance(verdict, Mapping) else None
        if echo != number or isinstance(echo, bool):
            return f"{MISMATCH} ({path} {number} says item {echo!r}, expected {number})"
    for k, verdict in enumerate(verdicts):
        other = reason_about_other_item(str(verdict.get("reason", "")), k, items, shown)
        if other is not None:
            return (f"{MISMATCH} ({path} {k + 1}: its reason {verdict.get('reason')!r} is about "
                    f"item {other + 1} {items[other]!r}, not item {k + 1} {items[k]!r})")
    return None


def verdicts_check(lists: Mapping[str, Sequence[str]], placeholders: Sequence[str],
                   shown: str = "") -> Callable[[Any], str | None]:
    """A runner check for an answer holding one verdict list per key of ``lists`` (key -> the
    items asked about, in order): no placeholder reason (:func:`reasons_check`), and each list
    matches its items (:func:`verdict_mismatch`). ``shown``: the rest of the prompt (question,
    contexts, ...); the items of the other lists count as shown for each list."""
    reasons = reasons_check(list(lists), placeholders)

    def check(value: Any) -> str | None:
        copied = reasons(value)
        if copied is not None:
            return copied
        for path, items in lists.items():
            others = " ".join(i for p, its in lists.items() if p != path for i in its)
            mismatch = verdict_mismatch(value.get(path, []), items, f"{shown} {others}", path)
            if mismatch is not None:
                return mismatch
        return None

    return check
