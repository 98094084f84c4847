"""Embeddings: how a vector is checked and stored, and cosine distance as sqlite-vec computes it.

A vector is stored as little-endian float32 (sqlite-vec's layout) in
evidence_vectors, tagged with the model that made it. The native engine ranks
with sqlite-vec's vec_distance_cosine inside SQLite; the Python engine computes
the same distance here, with every product and running sum rounded to float32
in the same order as sqlite-vec's loop, so the two agree bit for bit where
sqlite-vec is compiled without fused multiply-add (x86-64; docs/ranking.md, "Vectors"
states the tolerance elsewhere).
"""

from __future__ import annotations

import math
import numbers
import operator
import struct
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .errors import ValidationError

MAX_DIMS = 8192  # the CHECK of evidence_vectors.dims; sqlite-vec's own limit
MAX_COMPONENT = 1e9  # keeps every float32 sum of squares finite (8192 * 1e18 < 3.4e38)

_F32 = struct.Struct("<f")


@dataclass(frozen=True)
class Vector:
    """A checked embedding: the model that made it and its float32 bytes."""

    model: str
    dims: int
    blob: bytes

    def components(self) -> tuple[float, ...]:
        return struct.unpack(f"<{self.dims}f", self.blob)


# A batch's vectors, one per record (None: that record has none), or None for a batch without any.
Vectors = Sequence[Vector | None] | None


def f32(value: float) -> float:
    """``value`` rounded to the nearest float32, as a C float assignment does (beyond
    float32's range that is infinity; struct refuses it, C does not)."""
    try:
        return float(_F32.unpack(_F32.pack(value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def vector(model: str, values: object, field: str = "embedding") -> Vector:
    """Checks ``values`` (a sequence of real numbers) and packs it as float32.

    Every component must be a finite real number with magnitude at most 1e9, there
    must be 1..8192 of them, and the vector must not be zero (in float32): a zero
    vector has no direction, so no cosine distance. Raises ValidationError naming
    ``field`` otherwise."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValidationError(field, f"must be a sequence of numbers, got {type(values).__name__}")
    components = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValidationError(f"{field}[{i}]", f"must be a real number, got {type(value).__name__}")
        try:
            number = float(value)
        except OverflowError:  # an int or Fraction beyond float's range: 10**400
            number = math.inf if operator.gt(value, 0) else -math.inf
        if not math.isfinite(number) or abs(number) > MAX_COMPONENT:
            raise ValidationError(f"{field}[{i}]", f"must be finite and within ±1e9, got {_shown(value)}")
        components.append(number)
    if not 1 <= len(components) <= MAX_DIMS:
        raise ValidationError(field, f"must have 1..{MAX_DIMS} components, got {len(components)}")
    blob = struct.pack(f"<{len(components)}f", *components)
    packed = Vector(model, len(components), blob)
    if squared_norm(packed.components()) == 0.0:
        raise ValidationError(
            field,
            "has no length in float32 (the sum of its squared components rounds to 0), so it has no "
            "direction to compare; scale it up, or leave it out",
        )
    return packed


def _shown(value: object) -> str:
    """A number for an error message: a huge one is not printed whole."""
    if isinstance(value, float):
        return repr(value)
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 200 else ""
    return text if text and len(text) <= 40 else f"a {type(value).__name__} beyond ±1e9"


def embedding_list(embeddings: object, count: int) -> list[object]:
    """put_many's ``embeddings``: None (the embedder makes every vector), or a sequence
    (a list, a numpy array...) of one entry per record: an embedding, or None for the
    embedder's."""
    if embeddings is None:
        return [None] * count
    if not isinstance(embeddings, (str, bytes, Mapping)) and isinstance(embeddings, Iterable):
        try:
            if len(embeddings) == count:  # type: ignore[arg-type]
                return list(embeddings)
        except TypeError:  # no len(): a generator, say
            pass
    raise ValidationError("embeddings", f"must be a sequence holding one entry per record ({count})")


def squared_norm(components: Sequence[float]) -> float:
    """The float32 sum of squares, accumulated in order as sqlite-vec does."""
    total = 0.0
    for x in components:
        total = f32(total + f32(x * x))
    return total


def cosine_distance(a: Sequence[float], a_norm: float, b: Sequence[float]) -> float:
    """sqlite-vec's vec_distance_cosine(b, a), emulated: float32 accumulators for the
    dot product and b's sum of squares (``a_norm`` is a's, from squared_norm), then
    1 - dot / (sqrt(|a|²) * sqrt(|b|²)) in double, rounded to float32.

    The products of two float32 values are exact in double, and rounding a double
    sum of two float32 values to float32 gives the float32 sum, so each step here is
    the float32 operation sqlite-vec's C loop performs."""
    if len(a) != len(b):
        raise ValueError(f"vectors of {len(a)} and {len(b)} dimensions have no cosine distance")
    # Rounding to float32 in bulk where order does not matter (the products), one
    # step at a time where it does (the running sums): the slow part, kept tight.
    products = array("f", map(operator.mul, a, b))
    squares = array("f", map(operator.mul, b, b))
    pack, unpack = _F32.pack, _F32.unpack
    dot = b_norm = 0.0
    try:
        for product, square in zip(products, squares, strict=True):
            dot = unpack(pack(dot + product))[0]
            b_norm = unpack(pack(b_norm + square))[0]
    except OverflowError:  # a sum beyond float32's range: C gives infinity, struct refuses
        dot = b_norm = 0.0
        for product, square in zip(products, squares, strict=True):
            dot, b_norm = f32(dot + product), f32(b_norm + square)
    if math.isnan(dot) or math.isnan(b_norm):
        return math.nan
    denominator = math.sqrt(b_norm) * math.sqrt(a_norm)
    # C's IEEE division: x/0 is ±inf or NaN, inf/inf NaN; Python raises or needs the cases spelled out.
    if denominator == 0.0 or math.isinf(denominator):
        if denominator == 0.0 and dot != 0.0:
            quotient = math.copysign(math.inf, dot)
        elif math.isinf(denominator) and not math.isinf(dot):
            quotient = math.copysign(0.0, dot)
        else:
            quotient = math.nan
    else:
        quotient = dot / denominator
    return f32(1.0 - quotient)


class Embedder:
    """Names an embedding model and the function that runs it: text -> vector.

    ``embed`` is any callable returning a sequence of real numbers (a list, a
    tuple, a numpy array). ``model`` is stored with every vector it makes, so
    vectors of different models are never compared. pyevidence.ranking.embeddings.minilm()
    gives a local all-MiniLM-L6-v2 embedder.
    """

    def __init__(self, model: str, embed: Callable[[str], object]) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValidationError("model", "must name the embedding model, a non-empty string")
        try:
            model.encode("utf-8")
        except UnicodeEncodeError as exc:  # stored with every vector, as UTF-8 text
            raise ValidationError(
                "model", f"is not valid Unicode text (lone surrogate at index {exc.start})"
            ) from None
        if not callable(embed):
            raise ValidationError("embed", "must be a callable: text -> sequence of numbers")
        self.model = model
        self._embed = embed

    def vector(self, text: str, field: str = "embedding") -> Vector:
        """The checked embedding of ``text``."""
        return vector(self.model, self._embed(text), field)

    def __repr__(self) -> str:
        return f"Embedder(model={self.model!r})"
