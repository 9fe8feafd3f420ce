"""InputError: every validation path names the argument, the index and the reason as fields,
and its message is the one users have always seen."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from shared import validation
from shared.base.validation import InputError, InputTypeError, LengthError


def _raised(call: Any) -> InputError:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(
    ("call", "kind", "argument", "index", "message"),
    [
        (lambda: validation.as_list("predictions", None), ValueError, "predictions", None,
         "predictions is required"),
        (lambda: validation.as_list("predictions", "abc"), TypeError, "predictions", None,
         "predictions must be a list (one entry per sample), got str"),
        (lambda: validation.as_list("predictions", 3), TypeError, "predictions", None,
         "predictions must be a list (one entry per sample), got int"),
        (lambda: validation.texts("predictions", ["a", None]), ValueError, "predictions", 1,
         "predictions[1] is None; expected a string"),
        (lambda: validation.texts("predictions", ["a", 3]), TypeError, "predictions", 1,
         "predictions[1] must be a string, got int"),
        (lambda: validation.texts("predictions", ["a", " "]), ValueError, "predictions", 1,
         "predictions[1] is empty or whitespace only"),
        (lambda: validation.texts("predictions", ["\ud800"]), ValueError, "predictions", 0,
         "predictions[0] is not valid Unicode text: lone surrogate U+D800 at character 0 "
         "(decode the source with errors='replace', or remove it)"),
        (lambda: validation.text_or_texts("references", ["a", []]), ValueError, "references", 1,
         "references[1] is an empty list"),
        (lambda: validation.text_or_texts("references", ["a", ["b", ""]]), ValueError,
         "references", (1, 1), "references[1][1] is empty or whitespace only"),
        (lambda: validation.text_or_texts("references", [{"a": 1}]), TypeError, "references", 0,
         "references[0] must be a list (one entry per sample), got dict"),
        (lambda: validation.text_lists("contexts", ["a"]), TypeError, "contexts", 0,
         "contexts[0] must be a list of strings, got a string"),
        (lambda: validation.text_lists("contexts", [[]], allow_no_items=False), ValueError,
         "contexts", 0, "contexts[0] is an empty list"),
        (lambda: validation.text_lists("contexts", [["a"], ["b", 5]]), TypeError, "contexts",
         (1, 1), "contexts[1][1] must be a string, got int"),
        (lambda: validation.probability("threshold", "x"), TypeError, "threshold", None,
         "threshold must be a number in [0, 1], got str"),
        (lambda: validation.probability("threshold", 1.5), ValueError, "threshold", None,
         "threshold must be in [0, 1], got 1.5"),
        (lambda: validation.flag("exact", "yes"), TypeError, "exact", None,
         "exact must be True or False, got 'yes'"),
        (lambda: validation.weights("weights", [1.0], 2), ValueError, "weights", None,
         "weights must have 2 entries, got 1"),
        (lambda: validation.weights("weights", [1.0, "a"], 2), TypeError, "weights", 1,
         "weights[1] must be a finite number, got 'a'"),
        (lambda: validation.weights("weights", [1.0, -1.0], 2), ValueError, "weights", 1,
         "weights[1] is negative (-1.0); weights must be >= 0"),
        (lambda: validation.weights("weights", [0, 0], 2), ValueError, "weights", None,
         "weights must not sum to 0"),
    ],
)
def test_every_path_carries_its_fields(call: Any, kind: type, argument: str, index: Any,
                                       message: str) -> None:
    error = _raised(call)
    assert isinstance(error, kind)
    assert (error.argument, error.index, str(error)) == (argument, index, message)
    assert str(error) == f"{validation.where(argument, index)} {error.reason}"
    assert isinstance(error, InputTypeError) == (kind is TypeError)


def test_sample_is_the_first_step_of_a_path() -> None:
    assert InputError("references", (3, 1), "is empty").sample == 3
    assert InputError("references", 2, "is empty").sample == 2
    assert InputError("threshold", None, "is bad").sample is None


def test_errors_survive_pickling() -> None:
    error = pickle.loads(pickle.dumps(InputTypeError("contexts", (1, 2), "must be a string")))
    assert isinstance(error, TypeError) and error.index == (1, 2)
    assert str(error) == "contexts[1][2] must be a string"
    lengths = pickle.loads(pickle.dumps(LengthError({"predictions": 2, "references": 1})))
    assert lengths.lengths == {"predictions": 2, "references": 1}


def test_lengths_differ() -> None:
    with pytest.raises(LengthError, match="got lengths predictions=2, references=1") as caught:
        validation.same_length(predictions=["a", "b"], references=["a"])
    assert caught.value.lengths == {"predictions": 2, "references": 1}
