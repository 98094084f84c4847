"""The token index's SQL functions exist twice, in C (the native engine and the loadable
extension) and in Python (pyevidence/storage/index/docsets.py, sql_functions.py); the
index's tables come out byte-identical only if the two agree byte for byte. Here they
are called side by side: evidence_docset_with/without/union on random sets around the
list/bitset boundary (255/256 numbers), evidence_token_list on random text, and every
kind of non-docset refused by both."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import any_text

from pyevidence import EvidenceStore, StoreError, native_available
from pyevidence.storage import sql_functions
from pyevidence.storage.index import docsets

pytestmark = pytest.mark.skipif(not native_available(), reason="the C copies run on the native engine")

DOCS = st.integers(0, docsets.CHUNK_DOCS - 1)


@st.composite
def doc_sets(draw: st.DrawFn) -> frozenset[int]:
    """Sets of 0..600 document numbers, often of 254..257 (a list of at most 255
    numbers, a bitset from 256) and often dense in a small range."""
    size = draw(st.sampled_from([0, 1, 2, 254, 255, 256, 257]) | st.integers(0, 600))
    if size <= 16:  # small sets shrink to readable examples
        return frozenset(draw(st.sets(DOCS, min_size=size, max_size=size)))
    high = draw(
        st.sampled_from([size, size + 8, 1024, docsets.CHUNK_DOCS]).map(lambda h: min(h, docsets.CHUNK_DOCS))
    )
    # A seeded sample: drawing hundreds of distinct numbers one by one is slow.
    seed = draw(st.integers(0, 2**32))
    return frozenset(random.Random(seed).sample(range(high), size))


def bits_of(numbers: frozenset[int]) -> int:
    return sum(1 << n for n in numbers)


def encoded(numbers: frozenset[int]) -> bytes:
    return docsets.encode(bits_of(numbers))


@pytest.fixture(scope="module")
def c_sql() -> Iterator[Any]:
    """Calls one SQL function on the native engine's connection (the C copy)."""
    store = EvidenceStore(":memory:", engine="native")

    def call(function: str, *args: object) -> object:
        placeholders = ", ".join("?" * len(args))
        return store.query(f"SELECT {function}({placeholders})", list(args)).rows[0][0]

    yield call
    store.close()


# ---- the reference itself: encode and decode are inverse, and the format is as documented


@given(numbers=doc_sets())
def test_encode_is_the_documented_format(numbers: frozenset[int]) -> None:
    blob = encoded(numbers)
    if len(numbers) <= docsets.MAX_LISTED:
        assert blob == b"".join(n.to_bytes(2, "little") for n in sorted(numbers))
    else:
        assert len(blob) == docsets.BITSET_BYTES
        assert all(blob[n >> 3] >> (n & 7) & 1 for n in numbers)
    assert docsets.decode(blob) == bits_of(numbers)


# ---- C == Python, byte for byte


@given(numbers=doc_sets(), n=DOCS, null=st.booleans())
def test_docset_with_is_the_same_in_c_and_python(
    c_sql: Any, numbers: frozenset[int], n: int, null: bool
) -> None:
    blob = None if null and not numbers else encoded(numbers)
    expected = docsets.with_doc(blob, n)
    assert c_sql("evidence_docset_with", blob, n) == expected
    assert docsets.decode(expected) == bits_of(numbers | {n})


@given(numbers=doc_sets(), data=st.data())
def test_docset_without_is_the_same_in_c_and_python(c_sql: Any, numbers: frozenset[int], data: Any) -> None:
    # Mostly a member (the index only removes documents it holds), sometimes not.
    n = data.draw(st.sampled_from(sorted(numbers)) | DOCS if numbers else DOCS)
    blob = encoded(numbers)
    expected = docsets.without_doc(blob, n)
    assert c_sql("evidence_docset_without", blob, n) == expected
    assert docsets.decode(expected) == bits_of(numbers - {n})


@given(a=doc_sets(), b=doc_sets(), a_null=st.booleans(), b_null=st.booleans())
def test_docset_union_is_the_same_in_c_and_python(
    c_sql: Any, a: frozenset[int], b: frozenset[int], a_null: bool, b_null: bool
) -> None:
    blob_a = None if a_null and not a else encoded(a)
    blob_b = None if b_null and not b else encoded(b)
    expected = docsets.union(blob_a, blob_b)
    assert c_sql("evidence_docset_union", blob_a, blob_b) == expected
    assert docsets.decode(expected) == bits_of(a | b)


EDGE_TEXT = st.lists(
    st.sampled_from(
        ["\u0130", "\u212a", "\x00", "İSTANBUL", "Kelvin", "ß", "ǅ", "ﬃ", "A1", "z" * 300, " ", "-"]
    )
    | st.text(max_size=4),
    max_size=20,
).map("".join)


@given(text=any_text | EDGE_TEXT | st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_token_list_is_the_same_in_c_and_python(c_sql: Any, text: str) -> None:
    assert c_sql("evidence_token_list", text) == sql_functions.token_list(text)


# Tokens around 8 bytes that share their first 7 to 9: the C sort compares the first 8
# bytes as one integer and only longer tokens byte by byte (csrc/evidence_docset.c).
PREFIXED_TOKENS = st.lists(
    st.sampled_from(["abcdefg", "abcdefgh", "abcdefgha", "abcdefgh0", "abcdefghz", "abcdefghij", "ABCDEFGHI"])
    | st.sampled_from(["abcdefgi", "abcdefghaa", "a", "ab", "abcdefgz", "0", "z" * 20, "z" * 19 + "y"]),
    max_size=30,
).map(" ".join)


@given(text=PREFIXED_TOKENS)
def test_token_list_orders_tokens_that_share_their_first_bytes_as_python_does(c_sql: Any, text: str) -> None:
    assert c_sql("evidence_token_list", text) == sql_functions.token_list(text)


def test_token_list_of_null_is_null_in_both(c_sql: Any) -> None:
    assert c_sql("evidence_token_list", None) is None
    assert sql_functions.token_list(None) is None


@pytest.mark.parametrize("value", [3, 2.5, b"queue"])
def test_token_list_refuses_what_is_not_text_in_both(c_sql: Any, value: object) -> None:
    with pytest.raises(StoreError, match="evidence_token_list"):
        c_sql("evidence_token_list", value)
    with pytest.raises(TypeError, match="evidence_token_list"):
        sql_functions.token_list(value)


# ---- what is not a docset, refused by both


def _unsorted_lists() -> st.SearchStrategy[bytes]:
    """1..255 uint16 numbers, not strictly ascending below 4096."""

    def bad(numbers: list[int]) -> bool:
        return any(b <= a for a, b in itertools.pairwise(numbers)) or any(
            n >= docsets.CHUNK_DOCS for n in numbers
        )

    return (
        st.lists(st.integers(0, 0xFFFF), min_size=1, max_size=docsets.MAX_LISTED)
        .filter(bad)
        .map(lambda ns: b"".join(n.to_bytes(2, "little") for n in ns))
    )


def _sparse_bitsets() -> st.SearchStrategy[bytes]:
    """512 bytes holding 0..255 members: those belong in a list."""
    return st.sets(DOCS, max_size=docsets.MAX_LISTED).map(
        lambda ns: bits_of(frozenset(ns)).to_bytes(docsets.BITSET_BYTES, "little")
    )


def _bad_lengths() -> st.SearchStrategy[bytes]:
    """Odd lengths, and even lengths past 255 numbers that are not a bitset's 512."""
    lengths = st.integers(1, 1100).filter(
        lambda n: n % 2 == 1 or (n > 2 * docsets.MAX_LISTED and n != docsets.BITSET_BYTES)
    )
    return lengths.flatmap(lambda n: st.binary(min_size=n, max_size=n))


NOT_DOCSETS = _unsorted_lists() | _sparse_bitsets() | _bad_lengths()


@given(blob=NOT_DOCSETS, n=DOCS, function=st.sampled_from(["with", "without", "union_left", "union_right"]))
def test_non_docsets_are_refused_by_both(c_sql: Any, blob: bytes, n: int, function: str) -> None:
    good = docsets.encode(1 << n)
    c_call, py_call, args = {
        "with": ("evidence_docset_with", docsets.with_doc, (blob, n)),
        "without": ("evidence_docset_without", docsets.without_doc, (blob, n)),
        "union_left": ("evidence_docset_union", docsets.union, (blob, good)),
        "union_right": ("evidence_docset_union", docsets.union, (good, blob)),
    }[function]
    with pytest.raises(docsets.DocsetError, match="not a docset"):
        py_call(*args)
    with pytest.raises(StoreError, match=f"{c_call}\\(\\): not a docset"):
        c_sql(c_call, *args)


@pytest.mark.parametrize("n", [-1, docsets.CHUNK_DOCS, 2**40, 1.0, "1", b"\x01", None])
@pytest.mark.parametrize("function", ["with", "without"])
def test_numbers_outside_a_chunk_are_refused_by_both(c_sql: Any, n: object, function: str) -> None:
    c_call, py_call = {
        "with": ("evidence_docset_with", docsets.with_doc),
        "without": ("evidence_docset_without", docsets.without_doc),
    }[function]
    with pytest.raises(docsets.DocsetError, match="0 to 4095"):
        py_call(b"\x07\x00", n)
    with pytest.raises(StoreError, match="0 to 4095"):
        c_sql(c_call, b"\x07\x00", n)


@pytest.mark.parametrize("value", ["\x07\x00", 7, 7.5])
def test_docsets_that_are_not_blobs_are_refused_by_both(c_sql: Any, value: object) -> None:
    with pytest.raises(docsets.DocsetError):
        docsets.with_doc(value, 1)
    with pytest.raises(StoreError, match="evidence_docset_with"):
        c_sql("evidence_docset_with", value, 1)


def test_an_empty_blob_is_the_empty_set_in_both(c_sql: Any) -> None:
    """b"" is what evidence_docset_without leaves; it reads as no documents."""
    for function, py_call in (
        ("evidence_docset_with", docsets.with_doc),
        ("evidence_docset_without", docsets.without_doc),
    ):
        assert c_sql(function, b"", 5) == py_call(b"", 5)
    assert c_sql("evidence_docset_union", b"", b"") == docsets.union(b"", b"") == b""
