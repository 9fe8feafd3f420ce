"""shared.kit.embeddings with the real embedded all-MiniLM-L6-v2."""

from __future__ import annotations

import numpy as np
import pytest

from shared import defaults, embed_texts, load_embedding_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class CountingEncoder:
    """The real model, with a record of what it was asked to encode."""

    def __init__(self, model) -> None:
        self.model = model
        self.calls: list[list[str]] = []

    def encode(self, texts, **kwargs):
        self.calls.append(list(texts))
        return self.model.encode(texts, **kwargs)

    def get_embedding_dimension(self) -> int:
        return dimension(self.model)


@pytest.fixture(scope="module")
def model():
    return load_embedding_model()


def dimension(model) -> int:
    return (getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension)()


def test_loaded_once_per_process(model) -> None:
    assert load_embedding_model() is model
    assert load_embedding_model(str(defaults.embedding_model_dir())) is model
    assert str(model.device) == "cpu"


def test_rows_are_unit_float32_and_deduplicated(model) -> None:
    counting = CountingEncoder(model)
    texts = ["a cat", "a dog", "a cat", "", "😀 مرحبا", "a dog"]
    vectors = embed_texts(texts, model=counting, batch_size=2)
    assert counting.calls == [["a cat", "a dog", "", "😀 مرحبا"]]
    assert vectors.shape == (6, dimension(model))
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[2]) and np.array_equal(vectors[1], vectors[5])
    single = model.encode("a dog", normalize_embeddings=True)
    assert np.allclose(vectors[1], single, atol=1e-6)


def test_names_and_helpers(model) -> None:
    by_default = embed_texts(["brown fox", "lazy dog"])
    by_folder = embed_texts(["brown fox", "lazy dog"], model=str(defaults.embedding_model_dir()))
    assert np.array_equal(by_default, by_folder)
    sims = by_default @ by_default.T  # unit rows: the metrics' cosine similarity is this product
    assert sims.shape == (2, 2) and np.allclose(np.diag(sims), 1.0, atol=1e-5)
    assert sims[0, 1] == pytest.approx(sims[1, 0]) and sims[0, 1] < 0.9
    assert embed_texts([]).shape == (0, dimension(model))


def test_bad_arguments() -> None:
    with pytest.raises(OSError, match="not-a-real/model-xyz"):
        load_embedding_model("not-a-real/model-xyz")
    with pytest.raises(TypeError):
        embed_texts("one string")
    with pytest.raises(ValueError, match="batch_size"):
        embed_texts(["x"], batch_size=0)


def test_text_windows_cover_long_texts() -> None:
    """Short texts are one part (the text itself); a long text is split into windows the model
    reads whole (re-tokenised, each fits its limit), starting at the text's start, ending at its
    end, each overlapping the next; past max_windows the text is cut and says so."""
    from shared.kit.embeddings import embed_windows, pooled, text_windows, window_pieces

    model = load_embedding_model()
    tokenizer = model.tokenizer
    limit = model.max_seq_length - tokenizer.num_special_tokens_to_add(pair=False)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    long = " ".join(words[k % 12] + str(k) for k in range(700))  # ~2,500 word pieces
    short = "a short text"
    windows = text_windows([short, long, short], model)
    assert windows[0].parts == (short,) and not windows[0].windowed and windows[2] == windows[0]
    parts = windows[1].parts
    assert windows[1].windowed and not windows[1].cut and len(parts) > 5
    assert long.startswith(parts[0]) and long.endswith(parts[-1])
    for part in parts:
        assert part in long
        assert len(tokenizer(part, add_special_tokens=False)["input_ids"]) <= limit
    for a, b in zip(parts, parts[1:], strict=False):
        assert long.index(b) < long.index(a) + len(a)  # overlap
    assert window_pieces(model) <= limit

    cut = text_windows([long], model, max_windows=3)[0]
    assert cut.cut and cut.parts == parts[:3]

    vectors, rows, read = embed_windows([short, long], model)
    assert rows[0] == [0] and len(rows[1]) == len(parts) and read[1] == windows[1]
    assert np.allclose(vectors[0], embed_texts([short], model)[0], atol=1e-6)
    one = pooled(vectors, rows)
    assert np.allclose(np.linalg.norm(one, axis=1), 1.0, atol=1e-5)
    mean = vectors[rows[1]].mean(axis=0)
    assert np.allclose(one[1], mean / np.linalg.norm(mean), atol=1e-6)
