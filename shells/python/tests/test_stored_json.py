"""The host's strict reader on hostabi/testdata/stored-json.json, the cases the Go host
(internal/jsonx) and the Node shell check: every refusal worded alike, every value read
as the Go host reads it (numbers that are not safe integers as {"$number": text})."""

import base64
import json

import pytest
from conftest import REPO

from grantwire._json import Corrupt, encode, parse

CASES = json.loads((REPO / "hostabi" / "testdata" / "stored-json.json").read_text())["cases"]


def test_there_are_cases():
    assert len(CASES) >= 50


@pytest.mark.parametrize("case", CASES, ids=lambda c: json.dumps(c.get("in", c.get("in_base64")))[:40])
def test_stored_json(case):
    raw = case["in"].encode() if "in" in case else base64.b64decode(case["in_base64"])
    if "corrupt" in case:
        with pytest.raises(Corrupt) as e:
            parse(raw)
        assert str(e.value) == case["corrupt"]
    else:
        assert encode(parse(raw, facts=True)) == encode(case["value"])


def test_writer_is_the_go_hosts():
    # sorted keys, no HTML escaping, U+2028 escaped, raw numbers kept, 2-space ledger indentation
    doc = parse(b'{"b": [1, 1.50], "a": "<&>\\u2028\\u00e9"}')
    assert encode(doc) == '{"a":"<&>\\u2028\u00e9","b":[1,1.50]}'
    assert encode(doc, "  ") + "\n" == '{\n  "a": "<&>\\u2028\u00e9",\n  "b": [\n    1,\n    1.50\n  ]\n}\n'
    assert encode({}, "  ") == "{}" and encode([], "  ") == "[]"
