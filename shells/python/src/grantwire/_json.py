# Stored JSON as a host reads and writes it (hostabi/README.md, "Ledgers" and "Templates"):
# a strict reader whose refusals are the README's fixed reasons and whose numbers other than
# safe integers keep their text, and one writer for keyring values, JSON bodies and ledger
# files (keys sorted, no HTML escaping, U+2028/U+2029 escaped: what the Go host writes).

import json
import re


class Num:
    """A number that is not a safe integer, kept as its text; it travels as {"$number": text}."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, Num) and other.text == self.text


class Corrupt(Exception):
    """A document refused for one of the README's reasons (the message)."""


_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
# A number, and no "." or exponent left half-read after it ("1." is not a number, but "01"
# is 0 followed by trailing data).
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+|(?!\.))(?:[eE][+-]?[0-9]+|(?![eE]))")
_LITERALS = {"true": True, "false": False, "null": None}
_SAFE = re.compile(r"-?[0-9]{1,16}")


def parse(data):
    """Reads one JSON document of UTF-8 bytes strictly; raises Corrupt(reason)."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise Corrupt("not valid UTF-8") from None
    pos = 0

    def skip():
        nonlocal pos
        pos = _WS.match(text, pos).end()
        return text[pos : pos + 1]

    def token(pattern):
        nonlocal pos
        m = pattern.match(text, pos)
        if m is None:
            raise Corrupt("not valid JSON")
        pos = m.end()
        return m.group()

    def string():
        s = json.loads(token(_STRING))
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # a lone surrogate reads as U+FFFD

    def eat(c):
        nonlocal pos
        if skip() == c:
            pos += 1
            return True
        return False

    def value(depth):
        nonlocal pos
        if depth > 64:
            raise Corrupt("nested deeper than 64")
        c = skip()
        if c == '"':
            return string()
        if c in ("t", "f", "n"):
            for word, v in _LITERALS.items():
                if text.startswith(word, pos):
                    pos += len(word)
                    return v
            raise Corrupt("not valid JSON")
        if c not in ("[", "{"):
            n = token(_NUMBER)
            safe = _SAFE.fullmatch(n) and abs(int(n)) <= 2**53 - 1 and n != "-0"
            return int(n) if safe else Num(n)
        pos += 1
        out, close = ([], "]") if c == "[" else ({}, "}")
        if eat(close):
            return out
        while True:
            if c == "[":
                out.append(value(depth + 1))
            else:
                skip()
                k = string()
                if k in out:
                    raise Corrupt("duplicate member " + encode(k))
                if not eat(":"):
                    raise Corrupt("not valid JSON")
                out[k] = value(depth + 1)
            if not eat(","):
                break
        if not eat(close):
            raise Corrupt("not valid JSON")
        return out

    v = value(0)
    if skip() != "":
        raise Corrupt("trailing data after the JSON document")
    return v


def _quote(s):
    return json.dumps(s, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def encode(v, indent="", facts=False, pad=""):
    """Writes a JSON value: compact, or indented by indent with one member per line. Num is
    written as its raw text, or as {"$number": text} when facts is set (the form facts carry,
    in which ledger preconditions are compared)."""
    if isinstance(v, Num):
        return encode({"$number": v.text}) if facts else v.text
    if isinstance(v, str):
        return _quote(v)
    if not isinstance(v, (dict, list)):
        return json.dumps(v)
    inner = pad + indent
    nl = "\n" + inner if indent else ""
    if isinstance(v, list):
        items = [nl + encode(e, indent, facts, inner) for e in v]
    else:
        sep = ": " if indent else ":"
        items = [nl + _quote(k) + sep + encode(v[k], indent, facts, inner) for k in sorted(v)]
    close = "\n" + pad if indent and items else ""
    return ("[" if isinstance(v, list) else "{") + ",".join(items) + close + ("]" if isinstance(v, list) else "}")


def to_fact(v):
    """The value as facts carry it: Num as {"$number": text}."""
    if isinstance(v, Num):
        return {"$number": v.text}
    if isinstance(v, list):
        return [to_fact(e) for e in v]
    if isinstance(v, dict):
        return {k: to_fact(e) for k, e in v.items()}
    return v
