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
from pathlib import Path

from .errors import ScriptSyntaxError, SourceFileError


@dataclass(frozen=True)
class Sentence:
    """One Coq sentence with comments removed, and where it started."""

    text: str
    line: int
    offset: int


def _line_of(src: str, pos: int) -> int:
    return src.count("\n", 0, pos) + 1


def read_source(path: str | Path) -> str:
    """The text of a .v file, decoded as UTF-8 the way coqtop reads it.

    Every reader of a .v file in the bridge goes through here so that a file
    Coq could not read either (bad bytes, a directory, no permission) is one
    SourceFileError naming the file and, for bad bytes, where the first one
    is -- a user can fix that in an editor, a UnicodeDecodeError traceback
    tells them nothing.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceFileError(f"{path}: cannot read: {exc.strerror or exc}", str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SourceFileError(
            f"{path}: not valid UTF-8 (Coq reads .v files as UTF-8): byte "
            f"0x{data[exc.start]:02x} at offset {exc.start} (line {line}, column {column}); "
            "re-save the file as UTF-8", str(path), exc.start, line) from None


def split_file(path: str | Path) -> list[Sentence]:
    """The sentences of a .v file; errors name the file as well as the line."""
    src = read_source(path)
    try:
        return split_sentences(src)
    except ScriptSyntaxError as exc:
        raise ScriptSyntaxError(f"{path}: {exc}") from None


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
