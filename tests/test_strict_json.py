"""One strict JSON reader for every JSON text pyevidence does not trust (core/strict_json.py):
a ranking service's reply and each line of a JSONL import refuse the same texts, for the
same reason. Before, the import used json.loads with a hook of its own and let NaN through."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from pyevidence import bulk
from pyevidence.core import strict_json
from pyevidence.ranking.remote_reply import Unavailable, parse_scores

AT_MOST_100 = "at most 100 are accepted"
HOSTILE = {
    "a repeated key": ('{"a": 1, "a": 2}', "repeats the key 'a' in one object"),
    "a repeated key, nested": ('{"a": {"b": 1, "b": 1}}', "repeats the key 'b' in one object"),
    "NaN": ('{"a": NaN}', "is not valid JSON: NaN is not a number JSON allows"),
    "-Infinity": ('{"a": -Infinity}', "is not valid JSON: -Infinity is not a number JSON allows"),
    "a long integer": ('{"a": ' + "1" * 101 + "}", f"holds a number of 101 characters; {AT_MOST_100}"),
    "a long float": ('{"a": 0.' + "5" * 200 + "}", f"holds a number of 202 characters; {AT_MOST_100}"),
    "65 levels": ('{"a": ' + "[" * 64 + "]" * 64 + "}", "nests deeper than 64 levels"),
    "far too deep": ("[" * 100_000 + "]" * 100_000, "nests deeper than 64 levels"),
    "not JSON": ("{'a': 1}", "is not valid JSON: expected a key in double quotes at line 1, column 2"),
}


@pytest.mark.parametrize("text, reason", HOSTILE.values(), ids=HOSTILE.keys())
def test_every_reader_refuses_the_same_text_for_the_same_reason(
    open_store: Any, text: str, reason: str
) -> None:
    with pytest.raises(strict_json.JsonRefused) as parsed:
        strict_json.loads(text)
    assert str(parsed.value).startswith(reason)

    with pytest.raises(Unavailable) as reply:
        parse_scores(text.encode(), ["r0"])
    assert str(reply.value) == f"the reply {parsed.value}"

    store = open_store()
    with pytest.raises(bulk.ImportRefused) as imported:
        bulk.import_file(store, io.BytesIO(text.encode() + b"\n"), format="jsonl")
    (problem,) = (str(p) for p in imported.value.problems)
    if parsed.value.syntax is None:
        assert problem == f"line 1: {parsed.value}"
    else:  # json's own error: the import names the line's column instead of "line 1 column N"
        assert problem.startswith("line 1: is not valid JSON (")


ACCEPTED = {
    "64 levels": "[" * 64 + "]" * 64,
    "a 100-character number": "1" * 100,
    "a float": '{"a": -1.5e-300, "b": 0.1}',
    "the same key in two objects": '[{"a": 1}, {"a": 2}]',
    "text that looks like a long number": '"' + "9" * 500 + '"',
}


@pytest.mark.parametrize("text", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_text_within_the_limits_reads_as_json_loads_reads_it(text: str) -> None:
    assert strict_json.loads(text) == json.loads(text)


# Python's json words some errors differently from one version to the next, and points at
# another character: 3.13 says "Illegal trailing comma before end of object" at the comma
# where 3.11 says "Expecting property name enclosed in double quotes" at the bracket after it.
# pyevidence's words and positions are its own, the same bytes on every Python.
SYNTAX = {
    "a trailing comma in an object": ('{"a": 1,}', "a trailing comma before '}' at line 1, column 8"),
    "a trailing comma in an array": ("[1,2,]", "a trailing comma before ']' at line 1, column 5"),
    "a trailing comma, then spacing": ('{"a": [1, \n ]}', "a trailing comma before ']' at line 1, column 9"),
    "a trailing comma on a later line": ('{\n"a": 1,\n}', "a trailing comma before '}' at line 2, column 7"),
    "two commas": ("[1,,]", "expected a value at line 1, column 4"),
    "a lone comma": ("{,}", "expected a key in double quotes at line 1, column 2"),
    "a comma before the other bracket": ("[1,}", "expected a value at line 1, column 4"),
    "nothing": ("", "expected a value at line 1, column 1"),
    "no colon": ('{"a" 1}', "expected ':' after a key at line 1, column 6"),
    "no comma": ("[1 2]", "expected ',' or the end of the array or object at line 1, column 4"),
    "an open string": ('["abc', "a string starting here is not closed at line 1, column 2"),
    "a control character": ('"a\x01"', "a string holds a control character; escape it at line 1, column 3"),
    "a bad escape": ('"\\q"', "a string holds an escape that JSON does not have at line 1, column 2"),
    "a short \\u escape": (
        '"\\u12"',
        "a string holds a \\u escape without four hex digits at line 1, column 3",
    ),
    "more after the value": ("{} x", "more text follows the JSON value at line 1, column 4"),
}


@pytest.mark.parametrize("text, where", SYNTAX.values(), ids=SYNTAX.keys())
def test_text_that_is_not_json_is_told_the_same_on_every_python(text: str, where: str) -> None:
    with pytest.raises(strict_json.JsonRefused) as parsed:
        strict_json.loads(text)
    assert str(parsed.value) == f"is not valid JSON: {where}"


def test_an_import_line_with_a_trailing_comma_reads_the_same_on_every_python(open_store: Any) -> None:
    record = (
        '{"tenant":"t","record_id":"r","revision":"v1","kind":"runbook","body":"b","source":"s",'
        '"expires_at":1,}'
    )
    with pytest.raises(bulk.ImportRefused) as refused:
        bulk.import_file(open_store(), io.BytesIO(f"\n{record}\n[1,2,]\n".encode()), format="jsonl")
    assert str(refused.value) == (
        "input: 2 bad records, nothing was written:\n"
        "  line 2: is not valid JSON (a trailing comma before '}', column 102)\n"
        "  line 3: is not valid JSON (a trailing comma before ']', column 5)"
    )
