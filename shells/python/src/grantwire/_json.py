# Stored JSON as a host reads and writes it (hostabi/README.md, "Ledgers" and "Templates"):
# a strict reader whose refusals are the README's fixed reasons and whose numbers other than
# safe integers keep their text, and one writer for keyring values, JSON bodies and ledger
# files (keys sorted, no HTML escaping, U+2028/U+2029 escaped: what the Go host writes).

import json
import re


class Num:
    """A number that is not a safe integer, kept as its text; it travels as {"$number": text}."""

    def __init__(self, text):
        self.text = text


class Corrupt(Exception):
    """A document refused for one of the README's reasons (the message)."""


_WS = re.compile(r"[ \t\n\r]*")
_TOKEN = re.compile(r'(?P<s>"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")|(?P<l>true|false|null)|'
                    # a number, and no "." or exponent left half-read after it ("1." is not one; "01" is 0, then trailing data)
                    r"(?P<n>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+|(?!\.))(?:[eE][+-]?[0-9]+|(?![eE])))|(?P<p>[\[\]{}:,])")
_LITERALS = {"true": True, "false": False, "null": None}


def parse(data, facts=False):
    """Reads one JSON document of UTF-8 bytes strictly; raises Corrupt(reason). Numbers other than
    safe integers are Num, or with facts {"$number": text} (the form facts carry)."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise Corrupt("not valid UTF-8") from None
    pos = 0

    def token():  # the next token: (kind, text); s string, l literal, n number, p punctuation
        nonlocal pos
        m = _TOKEN.match(text, _WS.match(text, pos).end())
        syntax(m is None)
        pos = m.end()
        return m.lastgroup, m.group()

    def value(kind, t, depth):
        if depth > 64:
            raise Corrupt("nested deeper than 64")
        if kind == "s":  # a lone surrogate reads as U+FFFD
            return json.loads(t).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        if kind in "ln":  # a safe integer is an int; any other number keeps its text
            safe = kind == "n" and re.fullmatch(r"-?[0-9]{1,16}", t) and abs(int(t)) < 2**53 and t != "-0"
            return _LITERALS[t] if kind == "l" else int(t) if safe else {"$number": t} if facts else Num(t)
        syntax(t not in "[{")
        out, close = ([], "]") if t == "[" else ({}, "}")
        kind, t = token()
        while (kind, t) != ("p", close):
            if isinstance(out, list):
                out.append(value(kind, t, depth + 1))
            else:
                syntax(kind != "s")
                if (k := value(kind, t, depth + 1)) in out:
                    raise Corrupt("duplicate member " + encode(k))
                syntax(token() != ("p", ":"))
                out[k] = value(*token(), depth + 1)
            kind, t = token()
            if (kind, t) == ("p", ","):
                kind, t = token()
                syntax((kind, t) == ("p", close))
            else:
                syntax((kind, t) != ("p", close))
        return out

    v = value(*token(), 0)
    if _WS.match(text, pos).end() < len(text):
        raise Corrupt("trailing data after the JSON document")
    return v


def syntax(bad):
    if bad:
        raise Corrupt("not valid JSON")


def _quote(s):
    return json.dumps(s, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def encode(v, indent="", facts=False, pad=""):
    """Writes a JSON value: compact, or indented by indent with one member per line. Num is
    written as its raw text, or as {"$number": text} when facts is set (the form facts carry,
    in which ledger preconditions are compared)."""
    if isinstance(v, Num):
        return encode({"$number": v.text}) if facts else v.text
    if not isinstance(v, (dict, list)):
        return _quote(v) if isinstance(v, str) else json.dumps(v)
    nl = "\n" + pad + indent if indent else ""
    items = [nl + encode(e, indent, facts, pad + indent) for e in v] if isinstance(v, list) else \
        [nl + _quote(k) + (": " if indent else ":") + encode(v[k], indent, facts, pad + indent) for k in sorted(v)]
    brackets = "[]" if isinstance(v, list) else "{}"
    return brackets[0] + ",".join(items) + ("\n" + pad if indent and items else "") + brackets[1]
