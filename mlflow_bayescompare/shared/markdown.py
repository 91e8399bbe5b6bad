"""The one writer of the runs' descriptions: Markdown that MLflow's run page renders (showdown's GitHub flavour, then
a sanitizer that keeps links and images, under no Content-Security-Policy).

Every description is built by a :class:`Description`, whose methods take names, verdicts, ids, numbers and
sentences as *data*: each is escaped (:func:`escape`), so that no name can become a link, an image, HTML, a table
cell or a heading.  Markup of the package's own goes in only through :func:`raw`, whose argument must be a
constant of the package's source (a string literal or an UPPER_CASE constant; ``tests/test_markdown.py`` checks
every call); a link only through :class:`~.report_html.Link`, whose route must be one of MLflow's UI routes
(``#/…``).  The result is a :class:`Markdown`, which only a :class:`Description` makes: a description nested in
another (a metric's in a decision on several, a ranking's in a matrix's) is taken as that object, never as text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .report_html import Link

__all__ = ["Description", "Markdown", "Raw", "raw", "strong", "emphasis", "escape"]

_ENTITIES = {c: f"&#{ord(c)};" for c in "\\`*_[]|~@#"}
#: each character :func:`escape` replaces, by what: the entities above and :func:`html.escape`'s (quotes too)
_TRANSLATION = str.maketrans({**{c: html.escape(c, quote=True) for c in "&<>\"'"}, **_ENTITIES})
#: ':' and '/' unless a space follows, '.' unless a space follows or it sits between digits (0.95): no "://",
#: "www.x" or ":emoji:" is left, while sentences and numbers stay readable.
_AUTOLINK_PUNCTUATION = re.compile(r"[:/](?!\s)|(?<!\d)\.(?!\s)|\.(?![\s\d])")
#: the only link targets a description holds: MLflow's hash routes (:mod:`..vocabulary.uiroutes`)
_ROUTE = re.compile(r"#/[A-Za-z0-9/?=&._~%-]*")


def escape(text: Any) -> str:
    """``text`` as inert Markdown on one line: HTML-escaped, with Markdown's punctuation, '@', '#' and the
    punctuation of :data:`_AUTOLINK_PUNCTUATION` as numeric entities, so showdown's GitHub flavour finds no markup,
    autolink (URL, ``www.``, e-mail), @mention or emoji in it."""
    escaped = " ".join(str(text).split()).translate(_TRANSLATION)
    return _AUTOLINK_PUNCTUATION.sub(lambda m: f"&#{ord(m.group())};", escaped)


@dataclass(frozen=True)
class Raw:
    """Markdown written as it is: only from :func:`raw` (or built here from escaped parts)."""

    text: str


def raw(constant: str) -> Raw:
    """The package's own markup, written as it is: a string literal or an UPPER_CASE constant of the source, never a
    value that holds a name (``tests/test_markdown.py`` checks every call)."""
    return Raw(constant)


Part = str | int | float | Raw | Link | None


def _inline(parts: Iterable[Part]) -> str:
    """Parts side by side: data escaped, :class:`Raw` as it is, a :class:`Link` to an MLflow route as a link (any
    other target: its text only); ``None`` is nothing."""
    out = []
    for part in parts:
        if isinstance(part, Raw):
            out.append(part.text)
        elif isinstance(part, Link):
            route = str(part.route or "")
            out.append(f"[{escape(part.text)}]({route})" if _ROUTE.fullmatch(route) else escape(part.text))
        elif part is not None:
            out.append(escape(part))
    return "".join(out)


def strong(*parts: Part) -> Raw:
    """The parts in bold."""
    return Raw(f"**{_inline(parts)}**")


def emphasis(*parts: Part) -> Raw:
    """The parts in italics."""
    return Raw(f"_{_inline(parts)}_")


@dataclass(frozen=True)
class _Block:
    text: str
    level: int = 0  # a heading's level (its text without the '#'), 0 for any other block

    def shifted(self, levels: int) -> _Block:
        return _Block(self.text, min(self.level + levels, 6)) if self.level else self

    def __str__(self) -> str:
        return f"{'#' * self.level} {self.text}" if self.level else self.text


_MADE_HERE = object()


class Markdown:
    """A finished description (``str()``: its text).  Only :meth:`Description.done` makes one."""

    __slots__ = ("blocks",)

    def __init__(self, blocks: tuple[_Block, ...], made_by: object = None):
        if made_by is not _MADE_HERE:
            raise TypeError("a Markdown description is made by markdown.Description only")
        self.blocks = blocks

    def __str__(self) -> str:
        return "\n\n".join(map(str, self.blocks)) + "\n"

    def with_note(self, *parts: Part) -> Markdown:
        """This description with a paragraph of ``parts`` under its title (its first block)."""
        return Markdown((*self.blocks[:1], _Block(_inline(parts)), *self.blocks[1:]), _MADE_HERE)

    def nested(self) -> Markdown:
        """This description a level down, as a section of another: its headings one level deeper, a top-level
        title left out (the section's own heading replaces it)."""
        blocks = self.blocks[1:] if self.blocks and self.blocks[0].level == 1 else self.blocks
        return Markdown(tuple(b.shifted(1) for b in blocks), _MADE_HERE)


class Description:
    """A description being written, block by block (each method returns the writer); :meth:`done` finishes it."""

    def __init__(self) -> None:
        self._blocks: list[_Block] = []

    def heading(self, level: int, *parts: Part) -> Description:
        self._blocks.append(_Block(_inline(parts) or " ", level))
        return self

    def paragraph(self, *parts: Part) -> Description:
        self._blocks.append(_Block(_inline(parts)))
        return self

    def lines(self, lines: Iterable[Sequence[Part]]) -> Description:
        """One paragraph of several lines (hard line breaks), each line's parts side by side."""
        self._blocks.append(_Block("  \n".join(_inline(line) for line in lines)))
        return self

    def warning(self, *parts: Part) -> Description:
        return self.paragraph(raw("> ⚠️ **Warning:** "), *parts)

    def quote(self, head: Sequence[Part], items: Iterable[Part]) -> Description:
        """A block quote: ``head``'s parts, then one bullet per item."""
        self._blocks.append(_Block("\n".join([f"> {_inline(head)}", ">", *(f"> * {_inline([i])}" for i in items)])))
        return self

    def table(self, header: Sequence[Part], rows: Iterable[Sequence[Part]],
              align: Sequence[str] | None = None) -> Description:
        """A table: every cell a part (data escaped, so a '|' in a name stays in its cell); ``align`` per column:
        ``"left"`` (the default) or ``"right"``."""
        rule = "|" + "".join("---:|" if a == "right" else "---|" for a in (align or ["left"] * len(header)))
        lines = ["| " + " | ".join(_inline([h]) or " " for h in header) + " |", rule]
        lines += ["| " + " | ".join(_inline([c]) for c in row) + " |" for row in rows]
        self._blocks.append(_Block("\n".join(lines)))
        return self

    def include(self, other: Markdown) -> Description:
        """Every block of another finished description (e.g. :meth:`Markdown.nested`)."""
        if not isinstance(other, Markdown):
            raise TypeError("include takes a Markdown description made by markdown.Description")
        self._blocks.extend(other.blocks)
        return self

    def done(self) -> Markdown:
        return Markdown(tuple(self._blocks), _MADE_HERE)
