"""GitHub Actions expressions (`${{ ... }}`) as the composite action interpreter (ci/composite.py) needs them:
the contexts it passes (`inputs`, `steps`, `github`, `runner`, `env`), literals, `== != < <= > >= && || !` and
parentheses, compared as GitHub compares (strings case-insensitive, other mixed types as numbers), and the functions
`always() success() failure() cancelled() contains() startsWith() endsWith()`. What it cannot read is one line
(`ActionError`).
"""
from __future__ import annotations

import math
import re
from typing import Callable

EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)


class ActionError(Exception):
    """A one-line reason the action cannot be run here (bad input, an unknown `uses:`, an expression not understood)."""


TOKEN = re.compile(r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|<=|>=|&&|\|\||[<>!().,\[\]*])"
                   r"|(?P<ident>[A-Za-z_][A-Za-z0-9_-]*))")


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos, text = [], 0, text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ActionError(f"expression `{text}`: cannot read it at `{text[pos:].strip()}`")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _number(v) -> float:
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        s = v.strip()
        if not s:
            return 0.0
        try:
            return float(int(s, 16)) if s.lower().startswith("0x") else float(s)
        except ValueError:
            return math.nan
    return math.nan


def truthy(v) -> bool:
    """GitHub's truthiness: false, 0, NaN, '' and null are false."""
    if isinstance(v, float) and math.isnan(v):
        return False
    return bool(v) if v is not None else False


def _compare(op: str, a, b) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        a, b = a.lower(), b.lower()
    elif type(a) is not type(b) or a is None:
        a, b = _number(a), _number(b)
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def text(v) -> str:
    """A value as it is substituted into a string."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


class _Parser:
    """Recursive descent over the tokens of one expression, evaluating as it goes (no short-circuit needed: every
    operand is a lookup or a literal)."""

    def __init__(self, text: str, context: dict, functions: dict[str, Callable]):
        self.text, self.toks, self.i, self.ctx, self.fns = text, _tokens(text), 0, context, functions

    def fail(self, why: str):
        raise ActionError(f"expression `{self.text.strip()}`: {why}")

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            self.fail("ends too early")
        tok = self.toks[self.i]
        if want is not None and tok[1] != want:
            self.fail(f"expected `{want}`, found `{tok[1]}`")
        self.i += 1
        return tok

    def parse(self):
        v = self.or_()
        if self.i != len(self.toks):
            self.fail(f"unexpected `{self.peek()}`")
        return v

    def or_(self):
        v = self.and_()
        while self.peek() == "||":
            self.take()
            rhs = self.and_()
            v = v if truthy(v) else rhs
        return v

    def and_(self):
        v = self.not_()
        while self.peek() == "&&":
            self.take()
            rhs = self.not_()
            v = rhs if truthy(v) else v
        return v

    def not_(self):
        if self.peek() == "!":
            self.take()
            return not truthy(self.not_())
        return self.cmp()

    def cmp(self):
        v = self.primary()
        if self.peek() in ("==", "!=", "<", "<=", ">", ">="):
            op = self.take()[1]
            v = _compare(op, v, self.primary())
        return v

    def primary(self):
        kind, tok = self.take()
        if kind == "num":
            return float(tok)
        if kind == "str":
            return tok[1:-1].replace("''", "'")
        if tok == "(":
            v = self.or_()
            self.take(")")
            return v
        if kind != "ident":
            self.fail(f"unexpected `{tok}`")
        if tok in ("true", "false"):
            return tok == "true"
        if tok == "null":
            return None
        if self.peek() == "(":
            return self.call(tok)
        if tok not in self.ctx:
            self.fail(f"unknown context `{tok}` (known: {', '.join(sorted(self.ctx))})")
        v = self.ctx[tok]
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key = self.take()[1]
            else:
                key = text(self.or_())
                self.take("]")
            v = v.get(key) if isinstance(v, dict) else None
        return v

    def call(self, name: str):
        self.take("(")
        args = []
        while self.peek() != ")":
            args.append(self.or_())
            if self.peek() == ",":
                self.take()
        self.take(")")
        fn = self.fns.get(name.lower())
        if fn is None:
            self.fail(f"function {name}() is not one the simulation knows ({', '.join(sorted(self.fns))})")
        wants = fn.__code__.co_argcount
        if len(args) != wants:
            self.fail(f"{name}() takes {wants} argument{'s' * (wants != 1)}, given {len(args)}")
        return fn(*args)


def functions(status: str) -> dict[str, Callable]:
    """The status and string functions, for a job whose steps so far ended in `status` (success or failure)."""
    return {"always": lambda: True, "success": lambda: status == "success", "failure": lambda: status == "failure",
            "cancelled": lambda: False,
            "contains": lambda a, b: text(b).lower() in (a if isinstance(a, list) else text(a).lower()),
            "startswith": lambda a, b: text(a).lower().startswith(text(b).lower()),
            "endswith": lambda a, b: text(a).lower().endswith(text(b).lower())}


def evaluate(expr: str, context: dict, status: str = "success"):
    """The value of one expression (without `${{ }}`)."""
    return _Parser(expr, context, functions(status)).parse()


def substitute(value, context: dict, status: str = "success"):
    """`value` with every `${{ expr }}` replaced by its value (non-strings as they are)."""
    if not isinstance(value, str):
        return value
    return EXPR.sub(lambda m: text(evaluate(m.group(1), context, status)), value)


def condition(written, context: dict, status: str) -> bool:
    """A step's `if:` (default `success()`); a condition without a status function is `success() && (...)`."""
    expr = EXPR.sub(lambda m: m.group(1), str(written)).strip() if written not in (None, "") else "success()"
    if not re.search(r"\b(always|success|failure|cancelled)\s*\(", expr, re.I):
        expr = f"success() && ({expr})"
    return truthy(evaluate(expr, context, status))
