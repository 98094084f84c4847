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
    "not JSON": ("{'a': 1}", "is not valid JSON: Expecting property name enclosed in double quotes"),
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
    if parsed.value.decode_error is None:
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
