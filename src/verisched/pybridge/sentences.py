"""Splitting Coq text into sentences.

coqtop answers every sentence with one prompt, so the bridge must send
exactly one sentence at a time to keep its view of Coq's state in step with
Coq's own; a line holding two sentences would yield two prompts and desync
everything after it.  This splitter follows Coq's lexical rules closely
enough for proof scripts: nested comments, strings with doubled quotes,
bullets and braces as sentences of their own, and a period that ends a
sentence only when followed by whitespace (so `Z.add` and `x.1` do not).
It also refuses to end a sentence inside parentheses, so an unbalanced
parenthesis is reported at its line rather than as a confusing Coq error.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ScriptSyntaxError


@dataclass(frozen=True)
class Sentence:
    """One Coq sentence with comments removed, and where it started."""

    text: str
    line: int
    offset: int


def _line_of(src: str, pos: int) -> int:
    return src.count("\n", 0, pos) + 1


def split_sentences(src: str) -> list[Sentence]:
    """Split `src` into sentences; raises ScriptSyntaxError on malformed text."""
    out: list[Sentence] = []
    n = len(src)
    i = 0
    buf: list[str] = []
    start = -1
    depth = 0
    paren_open_at: list[int] = []

    def flush(end: int) -> None:
        nonlocal buf, start
        text = "".join(buf).strip()
        if text:
            if '"' not in text:
                text = " ".join(text.split())
            out.append(Sentence(text, _line_of(src, start), start))
        buf = []
        start = -1

    while i < n:
        c = src[i]
        if src.startswith("(*", i):
            j = _skip_comment(src, i)
            buf.append(" ")
            i = j
            continue
        if c == '"':
            j = _skip_string(src, i)
            if start < 0:
                start = i
            buf.append(src[i:j])
            i = j
            continue
        if start < 0:
            if c.isspace():
                i += 1
                continue
            # Bullets and braces are sentences of their own at a sentence start.
            if c in "-+*":
                j = i
                while j < n and src[j] == c:
                    j += 1
                if j >= n or src[j].isspace() or src[j] in "{}":
                    out.append(Sentence(src[i:j], _line_of(src, i), i))
                    i = j
                    continue
            if c in "{}":
                out.append(Sentence(c, _line_of(src, i), i))
                i += 1
                continue
            start = i
        if c == "(":
            depth += 1
            paren_open_at.append(i)
        elif c == ")":
            depth -= 1
            if depth < 0:
                raise ScriptSyntaxError(f"line {_line_of(src, i)}: unbalanced ')'")
            paren_open_at.pop()
        if c == "." and depth == 0 and (i + 1 >= n or src[i + 1].isspace()):
            buf.append(c)
            flush(i)
            i += 1
            continue
        buf.append(c)
        i += 1
    if depth > 0:
        raise ScriptSyntaxError(
            f"line {_line_of(src, paren_open_at[-1])}: '(' is never closed")
    rest = "".join(buf).strip()
    if rest:
        raise ScriptSyntaxError(
            f"line {_line_of(src, start)}: sentence not terminated by a period: {rest[:60]!r}")
    return out


def _skip_comment(src: str, i: int) -> int:
    """Index just after the (possibly nested) comment opening at `i`."""
    depth = 0
    n = len(src)
    j = i
    while j < n:
        if src.startswith("(*", j):
            depth += 1
            j += 2
        elif src.startswith("*)", j):
            depth -= 1
            j += 2
            if depth == 0:
                return j
        elif src[j] == '"':
            j = _skip_string(src, j)
        else:
            j += 1
    raise ScriptSyntaxError(f"line {_line_of(src, i)}: comment is never closed")


def _skip_string(src: str, i: int) -> int:
    """Index just after the string literal opening at `i` (`""` escapes a quote)."""
    j = i + 1
    n = len(src)
    while j < n:
        if src[j] == '"':
            if j + 1 < n and src[j + 1] == '"':
                j += 2
                continue
            return j + 1
        j += 1
    raise ScriptSyntaxError(f"line {_line_of(src, i)}: string is never closed")


def single_sentence(text: str) -> str:
    """The one sentence in `text`; refuses zero or several (see module doc)."""
    sentences = split_sentences(text)
    if len(sentences) != 1:
        raise ScriptSyntaxError(
            f"expected exactly one Coq sentence, found {len(sentences)}: {text[:80]!r}")
    return sentences[0].text
