"""The validation rules: the one place that decides which arguments are acceptable.

Both engines call these functions before touching the database, so a rejected
call changes nothing. The schema's CHECK constraints repeat the storable-row
rules as a guard for raw-SQL writers (tests/test_schema.py proves they agree).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import fields
from operator import attrgetter, itemgetter
from typing import Any

from .errors import ValidationError
from .limits import DEFAULT_LIMITS, Limits
from .records import KINDS, Record, parse_version
from .strict_json import shown
from .tokens import tokens

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
LIMIT_MIN = 1
LIMIT_MAX = 10
# A whole number written as text (a CSV cell, a command-line option): ASCII digits with an
# optional minus sign, spaces around allowed. Not int()'s wider rule, which also takes
# "1_000" and other scripts' digits (full-width "12"). At most 100 digits, as strict_json
# reads numbers: more would make int() slow; a number out of range is for the field's own
# check to name.
_WHOLE_NUMBER = re.compile(r"\s*(-?[0-9]{1,100})\s*")


def flag(field: str, value: Any) -> bool:
    """True or False, and nothing that merely tests true (1, "yes")."""
    if not isinstance(value, bool):
        raise ValidationError(field, f"must be True or False, got {shown(value)}")
    return value


def callback(field: str, value: Any, takes: str) -> Any:
    """A function or None; ``takes`` says what it is called with, for the message."""
    if value is not None and not callable(value):
        raise ValidationError(field, f"must be a function of {takes} or None, got {type(value).__name__}")
    return value


def whole_number_text(text: str) -> int | None:
    """The whole number ``text`` writes, or None when it writes none."""
    found = _WHOLE_NUMBER.fullmatch(text)
    return int(found.group(1)) if found else None


def not_a_whole_number(text: str) -> str:
    """What a CSV cell, a command-line option and a web page's parameter say of ``text`` that
    writes no whole number: one wording everywhere, the text cut to 80 characters as shown."""
    return f"must be a whole number, got {shown(text)}"


def whole_number(field: str, text: str) -> int:
    """The whole number ``text`` writes, or ValidationError(field) saying it writes none."""
    value = whole_number_text(text)
    if value is None:
        raise ValidationError(field, not_a_whole_number(text))
    return value


def text(field: str, value: Any, *, allow_empty: bool = False, max_bytes: int | None = None) -> str:
    """A str that SQLite can store as UTF-8, of at most max_bytes bytes of it;
    non-empty after stripping unless allowed."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if type(value) is not str:
        # A subclass's own methods (len, isspace, encode, ...) must not decide what is checked,
        # nor what an engine stores: both see this plain copy of its characters.
        value = str.__str__(value)
    if max_bytes is not None and len(value) > max_bytes:  # cheap first: UTF-8 is never shorter
        _too_long(field, len(value.encode("utf-8", "surrogatepass")), max_bytes)
    # isspace() is strip()'s notion of whitespace, without copying the text.
    if not allow_empty and (not value or value.isspace()):
        raise ValidationError(field, "must not be empty or only whitespace")
    if value.isascii():  # the common case: one byte per character, no surrogates
        size = len(value)
    else:
        size = _utf8_size(field, value)
    if max_bytes is not None and size > max_bytes:
        _too_long(field, size, max_bytes)
    return str(value)  # already a plain str: str() of one is the same object


def _utf8_size(field: str, value: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValidationError(
            field, f"is not valid Unicode text (lone surrogate at index {exc.start})"
        ) from None


def _too_long(field: str, size: int, limit: int) -> None:
    raise ValidationError(
        field, f"is {size:,} bytes of UTF-8, over this store's limit of {limit:,} (see Limits)"
    )


def integer(field: str, value: Any, *, minimum: int, maximum: int) -> int:
    """An int (bool excluded: True is not a time or a count) within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an integer, got {type(value).__name__}")
    # The plain int of a subclass: its own __int__ or comparisons must not decide what is
    # checked, nor what is stored.
    value = int.__index__(value)
    if not minimum <= value <= maximum:
        raise ValidationError(field, f"must be between {minimum} and {maximum}, got {shown(value)}")
    return int(value)  # already a plain int: int() of one is the same object


def record_kind(value: Any) -> str:
    plain = str.__str__(value) if isinstance(value, str) else None
    if plain not in KINDS:
        raise ValidationError("kind", f"must be one of {', '.join(KINDS)}; got {shown(value)}")
    return plain


def record(
    *,
    tenant: Any,
    record_id: Any,
    revision: Any,
    kind: Any,
    body: Any,
    source: Any,
    expires_at: Any,
    limits: Limits = DEFAULT_LIMITS,
) -> Record:
    """Validate put() arguments, in signature order, and return the Record to store."""
    field_bytes = limits.max_field_bytes
    return Record(
        tenant=text("tenant", tenant, max_bytes=field_bytes),
        record_id=text("record_id", record_id, max_bytes=field_bytes),
        revision=text("revision", revision, max_bytes=field_bytes),
        kind=record_kind(kind),
        body=text("body", body, max_bytes=limits.max_body_bytes),
        source=text("source", source, max_bytes=field_bytes),
        expires_at=integer("expires_at", expires_at, minimum=0, maximum=INT64_MAX),
    )


RECORD_FIELDS = tuple(f.name for f in fields(Record))
# The fields that hold text (all but expires_at), in the Record's order.
TEXT_FIELDS = tuple(name for name in RECORD_FIELDS if name != "expires_at")
_RECORD_FIELD_SET = frozenset(RECORD_FIELDS)
# A Record's or a mapping's fields as a tuple, in the Record's own order.
_record_values = attrgetter(*RECORD_FIELDS)
_mapping_values = itemgetter(*RECORD_FIELDS)


def _wrong_keys(where: str, values: Mapping[Any, Any]) -> None:
    """Raises the error that names the mapping's missing and unknown keys."""
    missing = [name for name in RECORD_FIELDS if name not in values]
    unknown = sorted(str(key) for key in values if key not in _RECORD_FIELD_SET)
    problems = []
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown {', '.join(unknown)}")
    raise ValidationError(where, "; ".join(problems))


def records(items: Any, limits: Limits = DEFAULT_LIMITS) -> list[Record]:
    """Validate every record of put_many() before anything is written.

    Each item is a Record or a mapping with exactly put()'s keyword arguments.
    An error names the item's index and field: ``records[3].tenant``.
    """
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise ValidationError("records", "must be an iterable of records (mappings or Record)")
    checked = []
    field_bytes, body_bytes = limits.max_field_bytes, limits.max_body_bytes
    for index, item in enumerate(items):
        plain = _plain_record(item, field_bytes, body_bytes)
        if plain is not None:
            checked.append(plain)
            continue
        where = f"records[{index}]"
        # A Record's fields as a mapping; not asdict(), whose deep copy costs more than the checks.
        values = {name: getattr(item, name) for name in RECORD_FIELDS} if isinstance(item, Record) else item
        if not isinstance(values, Mapping):
            raise ValidationError(where, f"must be a mapping or a Record, got {type(item).__name__}")
        if values.keys() != _RECORD_FIELD_SET:  # one set comparison: the common case
            _wrong_keys(where, values)
        try:
            valid = record(**values, limits=limits)
        except ValidationError as exc:
            raise ValidationError(f"{where}.{exc.field}", exc.reason) from None
        checked.append(item if kept_as_given(item, valid) else valid)
    return checked


def kept_as_given(item: Any, valid: Record) -> bool:
    """Whether records() keeps ``item`` itself (no copy) for the valid Record ``valid``: a
    Record of plain str and int fields, equal to it. Fields of subclasses are not kept:
    their own methods (encode(), __int__, ...) would decide what an engine stores."""
    return (
        type(item) is Record
        and all(type(value) is str for value in _record_values(item)[:-1])
        and type(item.expires_at) is int
        and valid == item
    )


def _plain_record(item: Any, field_bytes: int, body_bytes: int) -> Record | None:
    """The Record that records() returns for ``item`` when it is plainly valid: a Record
    or dict of exactly the fields, its text ASCII str within the limits and not blank, its
    kind known, its expires_at a plain int in range. None for anything else, which
    record() then checks in full and either accepts or refuses with the error. A
    shortcut, not a second rule: it accepts a subset of what record() accepts, and returns
    what records() would (tests/test_validation.py checks every edge of each field and random
    batches)."""
    kind = type(item)
    if kind is Record:
        values: tuple[Any, ...] = _record_values(item)
    elif kind is dict and item.keys() == _RECORD_FIELD_SET:
        values = _mapping_values(item)
    else:
        return None
    tenant, record_id, revision, record_kind_, body, source, expires_at = values
    for value, limit in (
        (tenant, field_bytes),
        (record_id, field_bytes),
        (revision, field_bytes),
        (body, body_bytes),
        (source, field_bytes),
    ):
        # ASCII: one UTF-8 byte a character and no surrogate; isspace() is true of no
        # empty string, hence the separate test of emptiness
        if (
            type(value) is not str
            or not value
            or len(value) > limit
            or not value.isascii()
            or value.isspace()
        ):
            return None
    if type(record_kind_) is not str or record_kind_ not in KINDS:
        return None
    if type(expires_at) is not int or not 0 <= expires_at <= INT64_MAX:
        return None
    return item if kind is Record else Record(*values)


def scope(*, tenant: Any, revision: Any, now: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[str, str, int]:
    """Validate the eligibility arguments of retrieve()."""
    return (
        text("tenant", tenant, max_bytes=limits.max_field_bytes),
        text("revision", revision, max_bytes=limits.max_field_bytes),
        integer("now", now, minimum=INT64_MIN, maximum=INT64_MAX),
    )


def query(value: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    """Any string within the limits is a query; one without tokens matches nothing lexically."""
    checked = text("query", value, allow_empty=True, max_bytes=limits.max_query_bytes)
    count = len(tokens(checked))
    if count > limits.max_query_tokens:
        raise ValidationError(
            "query",
            f"has {count:,} tokens, over this store's limit of {limits.max_query_tokens:,} (see Limits)",
        )
    return checked


def limit(value: Any) -> int:
    return integer("limit", value, minimum=LIMIT_MIN, maximum=LIMIT_MAX)


RETRIEVE_METHODS = ("index", "scan")


def method(value: Any, *, scorer: object) -> str:
    """retrieve()'s method: how the default token scorer finds its hits (None: "index").
    A custom scorer ranks by its own rule, so it takes no method."""
    if value is None:
        return "index"
    if not isinstance(value, str) or str.__str__(value) not in RETRIEVE_METHODS:
        raise ValidationError("method", f"must be 'index', 'scan' or None (the index); got {shown(value)}")
    if scorer is not None:
        raise ValidationError(
            "method",
            "applies to the default token scorer only; pass method or scorer, not both "
            f"(got method={value!r} with a {type(scorer).__name__})",
        )
    return str.__str__(value)


def record_key(*, tenant: Any, record_id: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[str, str]:
    """Validate the (tenant, record_id) pair that names one record."""
    return (
        text("tenant", tenant, max_bytes=limits.max_field_bytes),
        text("record_id", record_id, max_bytes=limits.max_field_bytes),
    )


def version(value: Any) -> tuple[int, str]:
    """Validate a version identifier as Hit.version renders it; returns (seq, content hash)."""
    parsed = parse_version(str.__str__(value)) if isinstance(value, str) else None
    if parsed is None:
        raise ValidationError(
            "version",
            f"must be a version as Hit.version gives it, '<seq>-<64 hex digits>'; got {shown(value)}",
        )
    return parsed


def tenant(value: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    return text("tenant", value, max_bytes=limits.max_field_bytes)


def sql_params(params: Any) -> list[Any]:
    """Positional parameters for store.query(): None, int (64-bit), float, str or bytes."""
    if isinstance(params, (str, bytes, Mapping)) or not isinstance(params, (list, tuple)):
        raise ValidationError("params", "must be a list or tuple of positional values")
    for index, value in enumerate(params):
        field = f"params[{index}]"
        if isinstance(value, bool) or not (value is None or isinstance(value, (int, float, str, bytes))):
            raise ValidationError(
                field, f"must be None, int, float, str or bytes, got {type(value).__name__}"
            )
        if isinstance(value, int):
            integer(field, value, minimum=INT64_MIN, maximum=INT64_MAX)
        if isinstance(value, str):
            text(field, value, allow_empty=True)
    return list(params)
