"""The shell's size, counted as the Node shell's README counts its own (no blank lines, no
comments; here no docstrings either), must be what shells/python/README.md states, and its
logic (the four files the Node shell counts: driver, engine, host, stored JSON) at most 400."""

import io
import pathlib
import re
import tokenize

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "grantwire"
README = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()


def code_lines(path):
    src = path.read_text()
    doc, prev = set(), None
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.STRING and prev in (tokenize.INDENT, tokenize.NEWLINE, tokenize.DEDENT, None):
            doc.update(range(tok.start[0], tok.end[0] + 1))  # a docstring
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            prev = tok.type
    return sum(1 for i, line in enumerate(src.splitlines(), 1) if line.strip() and not line.strip().startswith("#") and i not in doc)


SHELL_LOGIC = ("_driver.py", "_engine.py", "_host.py", "_json.py")


def stated(name):
    return int(re.search(r"\| `src/grantwire/" + re.escape(name) + r"` \|[^\n]*\| (\d+) \|", README).group(1))


def test_readme_states_the_counts():
    for n in (*SHELL_LOGIC, "_opa.py", "_os.py"):
        assert stated(n) == code_lines(SRC / n), n
    logic = sum(code_lines(SRC / n) for n in SHELL_LOGIC)
    assert re.search(rf"\| \*\*shell logic[^|]*\*\* \| \*\*{logic}\*\* \|", README), logic
    assert f"the host ABI in Python is {logic + code_lines(SRC / '_opa.py')} lines" in README.replace("\n", " ")
    api = sum(code_lines(SRC / n) for n in ("__init__.py", "errors.py", "__main__.py"))
    assert "`__main__.py` | the API:" in README and re.search(rf"\| {api} \|", README), api


def test_the_shell_logic_is_at_most_400_lines():
    assert sum(code_lines(SRC / n) for n in SHELL_LOGIC) <= 400


def test_every_module_is_counted():
    assert {p.name for p in SRC.glob("*.py")} == {*SHELL_LOGIC, "_opa.py", "_os.py", "__init__.py", "errors.py", "__main__.py"}
