"""Headless Chromium for the report tests: load a page, keep its screenshot, its DOM after
the scripts ran, and every console message.

One Chromium run does all three (`--screenshot` with `--dump-dom`; console messages go to
stderr with `--enable-logging=stderr --v=0`, as `INFO:CONSOLE` lines, errors and uncaught
exceptions included).  The Makefile's `chromium` step installs Debian's package; where it
is missing the tests skip, saying so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

_CONSOLE = re.compile(r":CONSOLE[^\]]*\]\s*(.*)")
_ERROR_ELEMENT = re.compile(r"""class="[^"]*\bkatex-error\b""")
_TYPESET = re.compile(r'data-typeset="(\d+)"')


def chromium() -> str | None:
    """The Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def require_chromium() -> str:
    path = chromium()
    if path is None:
        pytest.skip("chromium is not installed (`make test` installs Debian's chromium "
                    "package with apt-get when run as root; it could not here)")
    return path


@dataclass(frozen=True)
class Rendered:
    dom: str
    console: list[str]
    screenshot: Path

    @property
    def typeset(self) -> int:
        """How many formulas the page's script handed to KaTeX."""
        m = _TYPESET.search(self.dom)
        return int(m.group(1)) if m else 0

    @property
    def katex_errors(self) -> int:
        """Elements KaTeX marked as formulas it could not typeset."""
        return len(_ERROR_ELEMENT.findall(self.dom))


def render(page: Path, screenshot: Path, *, width: int = 1200, height: int = 2400,
           timeout: float = 120.0) -> Rendered:
    """Open `page` in headless Chromium (no network: it must not need any)."""
    exe = require_chromium()
    with tempfile.TemporaryDirectory(prefix="vs-chromium-") as profile:
        proc = subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
             # nothing may come from the network: the page is self-contained
             "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
             f"--window-size={width},{height}", f"--screenshot={screenshot}", "--dump-dom",
             "--enable-logging=stderr", "--v=0", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout)
    console = [m.group(1) for line in proc.stderr.splitlines() if (m := _CONSOLE.search(line))]
    assert proc.returncode == 0, proc.stderr[-2000:]
    return Rendered(proc.stdout, console, screenshot)


def assert_renders(page: Path, screenshot: Path, **kw: int) -> Rendered:
    """The page renders: every formula typeset by KaTeX without an error element, no
    console message, a screenshot written."""
    r = render(page, screenshot, **kw)
    assert r.typeset > 0, "the page's script did not run (no formula typeset)"
    assert r.dom.count('class="katex"') >= r.typeset, "KaTeX did not typeset every formula"
    assert r.katex_errors == 0, f"{r.katex_errors} formulas KaTeX could not typeset"
    assert not r.console, "console messages:\n" + "\n".join(r.console)
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000
    return r
