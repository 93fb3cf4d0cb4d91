"""The text_similarity metrics against the reference implementations they follow, and the
multi grader's formula parser."""

from __future__ import annotations

import random

import pytest

from jurist.compat.openai_graders import Formula, similarity
from jurist.errors import ConfigError

_WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "dog",
    "ran",
    "fast,",
    "slow.",
    "Paris",
    "is",
    "3.5",
    "km-long",
    "&",
    "big!",
    "The",
]


def _pairs(n: int = 300) -> list[tuple[str, str]]:
    rng = random.Random(7)
    return [
        (
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 14))),
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 14))),
        )
        for _ in range(n)
    ]


def test_fuzzy_match_is_rapidfuzz_ratio() -> None:
    fuzz = pytest.importorskip("rapidfuzz.fuzz")
    for a, b in _pairs():
        assert similarity(a, b, "fuzzy_match") == pytest.approx(fuzz.ratio(a, b) / 100)


def test_bleu_is_sacrebleu_sentence_bleu() -> None:
    sacrebleu = pytest.importorskip("sacrebleu")
    for a, b in _pairs():
        expected = sacrebleu.sentence_bleu(a, [b]).score / 100
        assert similarity(a, b, "bleu") == pytest.approx(expected, abs=1e-9)


def test_gleu_and_meteor_are_nltks() -> None:
    gleu = pytest.importorskip("nltk.translate.gleu_score")
    meteor = pytest.importorskip("nltk.translate.meteor_score")

    class NoSynonyms:  # the exact-match stage only (WordNet is not shipped here)
        def synsets(self, *args: object, **kwargs: object) -> list[object]:
            return []

    class NoStem:
        def stem(self, word: str) -> str:
            return word

    for a, b in _pairs():
        assert similarity(a, b, "gleu") == pytest.approx(gleu.sentence_gleu([b.split()], a.split()))
        expected = (
            meteor.meteor_score([b.split()], a.split(), wordnet=NoSynonyms(), stemmer=NoStem())
            if a.split()
            else 0.0
        )
        assert similarity(a, b, "meteor") == pytest.approx(expected)


def test_rouge_is_rouge_score_fmeasure() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    kinds = ["rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rougeL"]
    scorer = rouge_scorer.RougeScorer(kinds)
    for a, b in _pairs():
        got = scorer.score(b, a)
        for kind in kinds:
            metric = "rouge_l" if kind == "rougeL" else f"rouge_{kind[-1]}"
            assert similarity(a, b, metric) == pytest.approx(got[kind].fmeasure), (metric, a, b)


def test_cosine_uses_the_given_embedding_function() -> None:
    def embed(texts: object) -> list[list[float]]:
        return [[1.0, 0.0], [1.0, 1.0]]

    assert similarity("a", "b", "cosine", embed=embed) == pytest.approx(2**-0.5)


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("1 + 2 * 3", 7.0),
        ("(1 + 2) * 3", 9.0),
        ("2 ^ 3 ^ 2", 512.0),  # right-associative
        ("-2 ^ 2", -4.0),
        ("a / b - 1", 1.0),
        ("min(a, b, 1) + max(a, b)", 5.0),
        ("abs(-a) + floor(2.7) + ceil(0.2) + sqrt(b) + exp(0) + log(1)", 4 + 2 + 1 + 2**0.5 + 1),
        ("(100 - abs(b - a)) / 100", 0.98),
    ],
)
def test_formula_values(formula: str, expected: float) -> None:
    assert Formula.parse(formula, {"a", "b"}).evaluate({"a": 4.0, "b": 2.0}) == pytest.approx(
        expected
    )


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("a +", "unexpected end"),
        ("a b", "unexpected 'b'"),
        ("__import__(a)", "unknown function '__import__'"),
        ("a.real", "unexpected '.'"),
        ("sqrt(a, b)", "takes 1 argument"),
        ("(" * 100 + "a" + ")" * 100, "nested deeper"),
    ],
)
def test_formula_errors(formula: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        Formula.parse(formula, {"a", "b"})


def test_formula_arithmetic_failure_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="division"):
        Formula.parse("a / (b - b)", {"a", "b"}).evaluate({"a": 1.0, "b": 2.0})
