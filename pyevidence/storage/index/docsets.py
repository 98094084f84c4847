"""Docsets: the sets of document numbers of one chunk, as the index stores them.

One encoding, defined in schema.sql ("The token index") and implemented twice: here
for the Python engine and in csrc/evidence_docset.c for the native one
(tests/test_index_docsets.py proves the two byte for byte equal). A chunk holds
the document numbers 0..4095 of 4096 documents. A set of 1 to 255 numbers is
that many little-endian uint16, ascending; 256 or more is a 512-byte bitset,
bit n in byte n >> 3 at bit n & 7. The encoding depends on the set only, so
every writer that holds the same set writes the same bytes. The empty set is
b"" (the index deletes a row whose set becomes empty).
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Callable

CHUNK_BITS = 12
CHUNK_DOCS = 1 << CHUNK_BITS  # 4096 documents per chunk
ERA_CHUNK_BITS = 3  # chunks per era, the lead of the postings' key (schema.sql: era = chunk >> 3)
# Document numbers a search covers: below 2**32 (csrc/evidence_docset.h). A search sizes its
# counters by the scope's highest number; a larger one, which only a raw write to the index's
# tables gives, is an index out of step, not an allocation of terabytes.
DOC_NUMBER_LIMIT = 1 << 32
# Each number of a chunk as a list docset holds it: two bytes, little-endian.
PACKED_NUMBERS = [n.to_bytes(2, "little") for n in range(CHUNK_DOCS)]
BITSET_BYTES = CHUNK_DOCS // 8  # 512
MAX_LISTED = BITSET_BYTES // 2 - 1  # 255: up to this many numbers are listed, more are a bitset
_BIG_ENDIAN = sys.byteorder == "big"


class DocsetError(ValueError):
    """A blob that is not a docset, or a number outside a chunk."""


def decode(blob: bytes | None) -> int:
    """The set in ``blob`` as an int whose bit n is document n (None: the empty set)."""
    if not blob:
        return 0
    if len(blob) == BITSET_BYTES:
        bits = int.from_bytes(blob, "little")
        if bits.bit_count() <= MAX_LISTED:
            raise DocsetError("not a docset: a bitset of 255 numbers or fewer should be a list")
        return bits
    bits = 0
    for n in listed(blob):
        bits |= 1 << n
    return bits


def unpack(packed: bytes | bytearray) -> list[int]:
    """The little-endian uint16 numbers of ``packed`` (an even number of bytes), unchecked:
    a list docset's numbers, or a batch writer's numbers packed the same way."""
    numbers = array("H", packed)
    if _BIG_ENDIAN:
        numbers.byteswap()
    return numbers.tolist()


def listed(blob: bytes) -> list[int]:
    """The numbers of a docset that lists them (fewer than 512 bytes), ascending."""
    if len(blob) % 2 or len(blob) > 2 * MAX_LISTED:
        raise DocsetError(f"not a docset: {len(blob)} bytes")
    out = unpack(blob)
    if out and (out[-1] >= CHUNK_DOCS or out != sorted(set(out))):
        raise DocsetError("not a docset: its numbers are not ascending below 4096")
    return out


def encode_numbers(numbers: set[int] | list[int]) -> bytes:
    """The canonical docset of ``numbers`` (distinct, each 0..4095)."""
    if len(numbers) > MAX_LISTED:
        if min(numbers) < 0 or max(numbers) >= CHUNK_DOCS:
            raise DocsetError("a docset holds document numbers 0..4095 only")
        # set byte by byte: cheaper than or-ing thousands of 4096-bit integers
        bitset = bytearray(BITSET_BYTES)
        for n in numbers:
            bitset[n >> 3] |= 1 << (n & 7)
        bits = int.from_bytes(bitset, "little")
        return encode(bits) if bits.bit_count() <= MAX_LISTED else bytes(bitset)  # repeats in a list
    out = sorted(numbers)
    if out and (out[0] < 0 or out[-1] >= CHUNK_DOCS):
        raise DocsetError("a docset holds document numbers 0..4095 only")
    return _packer(len(out))(*out)


def encode(bits: int) -> bytes:
    """The canonical docset of the set whose bit n is document n."""
    if bits < 0 or bits >> CHUNK_DOCS:
        raise DocsetError("a docset holds document numbers 0..4095 only")
    count = bits.bit_count()
    if count > MAX_LISTED:
        return bits.to_bytes(BITSET_BYTES, "little")
    # the set bits' places, found in the binary text from the low end
    text = bin(bits)[:1:-1]
    out = []
    at = text.find("1")
    while at >= 0:
        out.append(at)
        at = text.find("1", at + 1)
    return _packer(count)(*out)


_PACKERS: dict[int, Callable[..., bytes]] = {}


def _packer(count: int) -> Callable[..., bytes]:
    """struct's packing of ``count`` little-endian uint16, made once per count."""
    pack = _PACKERS.get(count)
    if pack is None:
        pack = _PACKERS[count] = struct.Struct(f"<{count}H").pack
    return pack


def _number(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < CHUNK_DOCS:
        raise DocsetError(f"a document number in a chunk is an integer from 0 to {CHUNK_DOCS - 1}, not {n!r}")
    return n


def _blob(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    raise DocsetError(f"a docset is a blob or NULL, not {type(value).__name__}")


def with_doc(blob: object, n: object) -> bytes:
    """evidence_docset_with(docs, n): ``docs`` (NULL: empty) with document n added."""
    return encode(decode(_blob(blob)) | 1 << _number(n))


def without_doc(blob: object, n: object) -> bytes:
    """evidence_docset_without(docs, n): ``docs`` without document n (b"" when none is left)."""
    return encode(decode(_blob(blob)) & ~(1 << _number(n)))


def union(a: object, b: object) -> bytes:
    """evidence_docset_union(a, b): every document of either (NULL: empty)."""
    return encode(decode(_blob(a)) | decode(_blob(b)))
