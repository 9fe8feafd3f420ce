"""The user's mistake, as one type: :class:`UserInputError`."""

from __future__ import annotations


class UserInputError(ValueError):
    """The user's input or options are wrong (unknown metric, missing column, bad cell, bad
    option): a message of one line that says what to change. The CLI prints it without a
    traceback and exits 2; the demo shows it on the page.

    A metric's own check of one argument raises the finer
    :class:`~shared.base.validation.InputError` (argument, sample index, reason) from
    ``compute``; the batch layer turns it into a ``UserInputError`` naming the column and row.
    """


class UnknownOptionError(UserInputError, TypeError):
    """An option nobody declares (``modle=...``): one line naming it and the nearest known name,
    the same words from every front end (``shared.base.options.refuse_unknown``). A
    ``TypeError`` too, as Python's own unexpected keyword argument is."""
