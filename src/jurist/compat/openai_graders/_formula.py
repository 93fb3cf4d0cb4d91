"""``calculate_output``: a multi grader's formula over its sub-graders' results, read by a
small recursive-descent parser (never ``eval``).

The grammar is the one OpenAI's graders guide documents: numbers, the names of the
sub-graders, ``+ - * / ^`` (``^`` is power, right-associative, above unary minus, as in
``-2^2 == -4``), parentheses and the functions ``min``, ``max``, ``abs``, ``floor``,
``ceil``, ``exp``, ``sqrt`` and ``log`` (natural). A formula is parsed once, when the
grader loads, so an unknown name or a stray parenthesis is reported before any call.

>>> f = Formula.parse("(name + email) / 2", names={"name", "email"})
>>> f.evaluate({"name": 0.9, "email": 1.0})
0.95
>>> Formula.parse("max(a, b) ^ 2 - -1", names={"a", "b"}).evaluate({"a": 0.5, "b": 0.25})
1.25
>>> Formula.parse("0.5 * a +  0.5 * b)", names={"a", "b"})
Traceback (most recent call last):
...
jurist.errors.ConfigError: calculate_output '0.5 * a +  0.5 * b)': unexpected ')' at column 19
>>> Formula.parse("a + c", names={"a", "b"})
Traceback (most recent call last):
...
jurist.errors.ConfigError: calculate_output 'a + c': unknown name 'c' at column 5 (the graders are a, b)
"""  # noqa: E501

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from jurist.errors import ConfigError

__all__ = ["FUNCTIONS", "Formula"]

FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)),
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
_ARITY = {"min": None, "max": None, "abs": 1, "floor": 1, "ceil": 1, "exp": 1, "sqrt": 1, "log": 1}
_TOKEN = re.compile(
    r"\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|([A-Za-z_]\w*)|(.))"
)
MAX_LENGTH = 2000
MAX_DEPTH = 64

# A parsed node: ("num", value) | ("var", name) | ("neg", node) | (op, left, right)
# | ("call", fn, args)
Node = tuple[Any, ...]


@dataclass(frozen=True)
class Formula:
    """A parsed ``calculate_output`` formula."""

    text: str
    tree: Node
    names: tuple[str, ...]

    @classmethod
    def parse(cls, text: str, names: Collection[str]) -> Formula:
        if len(text) > MAX_LENGTH:
            raise ConfigError(f"calculate_output is {len(text)} characters (at most {MAX_LENGTH})")
        parser = _Parser(text, set(names))
        tree = parser.expression(0)
        left = parser.peek()
        if left is not None:
            parser.at = left[2]
            parser.fail(f"unexpected {left[1]!r}")
        return cls(text=text, tree=tree, names=tuple(sorted(parser.used)))

    def evaluate(self, values: Mapping[str, float]) -> float:
        """The formula's value with each name bound to ``values[name]``; an arithmetic
        failure (division by zero, ``sqrt`` of a negative) raises ``ValueError``."""
        try:
            return float(_eval(self.tree, values))
        except (ZeroDivisionError, OverflowError, ValueError) as e:
            raise ValueError(f"calculate_output {self.text!r}: {e}") from None


def _eval(node: Node, values: Mapping[str, float]) -> float:
    kind = node[0]
    if kind == "num":
        return float(node[1])
    if kind == "var":
        return float(values[node[1]])
    if kind == "neg":
        return -_eval(node[1], values)
    if kind == "call":
        result: float = FUNCTIONS[node[1]](*(_eval(a, values) for a in node[2]))
        return result
    left, right = _eval(node[1], values), _eval(node[2], values)
    if kind == "+":
        return left + right
    if kind == "-":
        return left - right
    if kind == "*":
        return left * right
    if kind == "/":
        return left / right
    power: float = left**right
    if isinstance(power, complex):
        raise ValueError(f"{left} ^ {right} is not a real number")
    return power


class _Parser:
    def __init__(self, text: str, names: set[str]) -> None:
        self.text = text
        self.names = names
        self.used: set[str] = set()
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:  # only trailing spaces are left
                break
            number, name, other = m.groups()
            start = m.start(m.lastindex or 0)
            if number is not None:
                self.tokens.append(("num", number, start))
            elif name is not None:
                self.tokens.append(("name", name, start))
            elif other is not None:
                if other not in "+-*/^(),":
                    self.at = start
                    self.fail(f"unexpected {other!r}")
                self.tokens.append(("op", other, start))
            pos = m.end()
        self.i = 0
        self.at = len(text)
        self.depth = 0

    def fail(self, message: str) -> None:
        raise ConfigError(f"calculate_output {self.text!r}: {message} at column {self.at + 1}")

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str, int]:
        token = self.peek()
        if token is None:
            self.at = len(self.text)
            self.fail("unexpected end")
            raise AssertionError  # fail raised
        self.at = token[2]
        self.i += 1
        return token

    def expect(self, op: str) -> None:
        token = self.take()
        if token[1] != op or token[0] != "op":
            self.fail(f"expected {op!r}, found {token[1]!r}")

    def expression(self, level: int) -> Node:
        """level 0: + -; level 1: * /."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"nested deeper than {MAX_DEPTH}")
        ops = ("+", "-") if level == 0 else ("*", "/")
        node = self.expression(1) if level == 0 else self.unary()
        while (t := self.peek()) is not None and t[0] == "op" and t[1] in ops:
            self.take()
            right = self.expression(1) if level == 0 else self.unary()
            node = (t[1], node, right)
        self.depth -= 1
        return node

    def unary(self) -> Node:
        t = self.peek()
        if t is not None and t[0] == "op" and t[1] in "+-":
            self.take()
            operand = self.unary()
            return ("neg", operand) if t[1] == "-" else operand
        return self.power()

    def power(self) -> Node:
        base = self.atom()
        t = self.peek()
        if t is not None and t[0] == "op" and t[1] == "^":
            self.take()
            return ("^", base, self.unary())
        return base

    def atom(self) -> Node:
        kind, text, _ = self.take()
        if kind == "num":
            return ("num", float(text))
        if kind == "name":
            nxt = self.peek()
            if nxt is not None and nxt[1] == "(" and nxt[0] == "op":
                return self.call(text)
            if text not in self.names:
                known = ", ".join(sorted(self.names))
                raise ConfigError(
                    f"calculate_output {self.text!r}: unknown name {text!r} at column "
                    f"{self.at + 1} (the graders are {known})"
                )
            self.used.add(text)
            return ("var", text)
        if text == "(":
            node = self.expression(0)
            self.expect(")")
            return node
        self.fail(f"unexpected {text!r}")
        raise AssertionError

    def call(self, fn: str) -> Node:
        if fn not in FUNCTIONS:
            self.fail(f"unknown function {fn!r} (known: {', '.join(FUNCTIONS)})")
        self.expect("(")
        args = [self.expression(0)]
        while (t := self.peek()) is not None and t[1] == ",":
            self.take()
            args.append(self.expression(0))
        self.expect(")")
        arity = _ARITY[fn]
        if (arity is not None and len(args) != arity) or not args:
            self.fail(f"{fn}() takes {arity} argument(s), got {len(args)}")
        return ("call", fn, tuple(args))
