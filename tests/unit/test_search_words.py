"""Query analysis shared by both search indexes (memnet/domain/search_words.py), and the
parts of it each index does its own way, configured to agree: the embedded index's FTS5
tokenizer and the Azure AI Search analyzer in search_index.json. Azure cannot run here;
what can be checked is that the definition names the same character classes and the same
filter chain, and that the embedded side behaves as that chain does."""

from __future__ import annotations

import json
import sqlite3
import unicodedata

import pytest

from memnet.adapters.azure.search import INDEX_DEFINITION
from memnet.adapters.local.search_postings import TOKENIZER, analyse, prepare
from memnet.domain.search_words import MAX_QUERY_WORDS, STOP_WORDS, query_words, words


def test_query_text_is_only_distinct_words() -> None:
    assert query_words('NEAR(x y) "z" col:term -y * AND x X') == [
        "NEAR", "x", "y", "z", "col", "term",
    ]  # fmt: skip
    assert query_words("\"'*()") == []
    assert len(query_words(" ".join(f"w{i}" for i in range(100)))) == MAX_QUERY_WORDS


def test_stop_words_leave_the_query_unless_nothing_else_remains() -> None:
    assert query_words("When did I switch the product search to OpenSearch?") == [
        "switch", "product", "search", "OpenSearch",
    ]  # fmt: skip
    assert query_words("to be or not to be") == ["to", "be", "or", "not"]
    assert query_words("THE Who") == ["THE", "Who"]  # case-insensitive, first spelling kept


def test_the_word_limit_counts_words_that_are_searched() -> None:
    text = " ".join(["the"] * 10 + [f"w{i}" for i in range(40)])
    assert query_words(text) == [f"w{i}" for i in range(MAX_QUERY_WORDS)]


def test_the_stop_list_is_lowercase_words_the_tokenizer_keeps_whole() -> None:
    assert len(STOP_WORDS) > 100 and {"what", "which", "did", "i", "my", "the"} <= STOP_WORDS
    assert all(words(w) == [w] and w == w.casefold() for w in STOP_WORDS)


def test_the_azure_analyzer_is_the_embedded_analysis() -> None:
    definition = json.loads(INDEX_DEFINITION.read_text())
    (analyzer,) = definition["analyzers"]
    (tokenizer,) = definition["tokenizers"]
    assert analyzer["tokenizer"] == tokenizer["name"]
    # FTS5 "unicode61 remove_diacritics 2" lowercases and folds diacritics, then "porter"
    # stems with Martin Porter's algorithm: Lucene's lowercase, asciifolding, porter_stem.
    assert analyzer["tokenFilters"] == ["lowercase", "asciifolding", "porter_stem"]
    assert TOKENIZER.startswith("porter unicode61 remove_diacritics 2 ")
    # Split where a character is not a letter, digit or mark (group -1: the pattern is
    # the separator), as words() splits.
    assert tokenizer["@odata.type"] == "#Microsoft.Azure.Search.PatternTokenizer"
    assert (tokenizer["pattern"], tokenizer["group"]) == ("[^\\p{L}\\p{N}\\p{M}]+", -1)
    for field in ("digest", "keywords"):
        (spec,) = [f for f in definition["fields"] if f["name"] == field]
        assert spec["analyzer"] == analyzer["name"]


def test_word_characters_are_letters_digits_and_marks_as_the_azure_pattern_says() -> None:
    """Every code point NFKC leaves alone joins a word exactly when its category is L, N
    or M (``_`` aside: it separates words here, as in Azure's pattern)."""
    differ = []
    for point in range(0x110000):
        char = chr(point)
        if 0xD800 <= point <= 0xDFFF or char == "_":
            continue
        if unicodedata.normalize("NFKC", char) != char:
            continue
        joins = len(words(f"q{char}q")) == 1
        if joins != (unicodedata.category(char)[0] in "LNM"):
            differ.append(hex(point))
    assert differ == []


@pytest.mark.parametrize(
    ("word", "term"),
    [  # Porter's original algorithm (as Lucene's porter_stem), not Porter2/Snowball
        ("generalizations", "gener"),
        ("memories", "memori"),
        ("running", "run"),
        ("caresses", "caress"),
        ("Café", "cafe"),
        ("RÉSUMÉS", "resum"),
    ],
)
def test_the_embedded_analyser_folds_and_stems_as_the_azure_chain(word: str, term: str) -> None:
    db = sqlite3.connect(":memory:")
    prepare(db)
    assert analyse(db, [(word, "")]) == [([term], [])]
