"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``).

The docstrings hold their examples as doctests (``>>>`` lines and the output below them,
run by pytest) without a Markdown fence around them. Read as Markdown, such a block is a
paragraph: its lines run together and ``x["a"]["b"]`` reads as a reference link. This
hook adds a Markdown preprocessor, seen by the pages and by mkdocstrings' docstrings
alike, that fences every doctest block outside a fence as ``pycon`` code: from a ``>>>``
line to the next blank line. It also writes the docstrings' Sphinx roles
(``:class:`~jurist.models.Model```) as the code they name (``Model``).
"""

from __future__ import annotations

import re
from typing import Any

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor
from mkdocs.plugins import event_priority

_FENCE = re.compile(r"^\s*(```|~~~)")
_PROMPT = re.compile(r"^(\s*)>>> ")
_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    name = match.group(2)
    return f"`{name.rsplit('.', 1)[-1] if match.group(1) else name}`"


class _DoctestBlocks(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fenced = False
        block: list[str] = []
        indent = ""
        for line in [*lines, ""]:
            if block:
                if line.strip():
                    block.append(line)
                    continue
                out += [f"{indent}```pycon", *block, f"{indent}```"]
                block = []
            if _FENCE.match(line):
                fenced = not fenced
            prompt = None if fenced else _PROMPT.match(line)
            if prompt:
                indent = prompt.group(1)
                block = [line]
                if out and out[-1].strip():
                    out.append("")
                continue
            out.append(line if fenced else _ROLE.sub(_role, line))
        return out[:-1] if out and out[-1] == "" and (not lines or lines[-1] != "") else out


class DoctestBlocks(Extension):
    """Fence doctest blocks as ``pycon`` code."""

    def extendMarkdown(self, md: Markdown) -> None:
        md.preprocessors.register(_DoctestBlocks(md), "doctest_blocks", 40)


@event_priority(100)  # before mkdocstrings reads the extensions for its docstrings
def on_config(config: Any) -> Any:
    config.markdown_extensions.append(DoctestBlocks())
    return config
