"""Independent readers of a report page: every external reference a browser would fetch,
the scripts' CSP hashes, the numbers shown; headless Chromium."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def chromium(*args: str, timeout: int = 90) -> subprocess.CompletedProcess:
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars", "--mute-audio"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=timeout)


# Independent readers of a report page for the tests: every external reference a browser
URL_ATTRS = {
    "src",
    "href",
    "srcset",
    "action",
    "formaction",
    "poster",
    "data",
    "xlink:href",
    "background",
    "manifest",
    "ping",
    "cite",
    "longdesc",
    "codebase",
    "archive",
    "icon",
    "lowsrc",
    "dynsrc",
}


CSS_URL = re.compile(r"url\(\s*(['\"]?)([^)'\"]*)\1\s*\)|@import\s+(['\"])([^'\"]+)\3", re.I)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.scripts: list[str] = []
        self.csp: str | None = None
        self.numbers: dict[str, tuple[str | None, str]] = {}
        self.ids: list[str] = []
        self._stack: list[tuple[str, dict]] = []
        self._text: list[list[str]] = []
        self._in: str | None = None
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = {k.lower(): (v or "") for k, v in attrs}
        for key, value in a.items():
            if key in URL_ATTRS:
                self.refs.extend(
                    part.strip().split(" ")[0] for part in value.split(",")
                ) if key == "srcset" else self.refs.append(value.strip())
            if key == "style":
                self.refs.extend(m.group(2) or m.group(4) for m in CSS_URL.finditer(value))
        if tag == "meta" and a.get("http-equiv", "").lower() == "content-security-policy":
            self.csp = a.get("content")
        if tag == "section" and a.get("id"):
            self.ids.append(a["id"])
        if tag in ("script", "style"):
            self._in, self._buf = tag, []
        if "data-metric" in a:
            self._stack.append((tag, a))
            self._text.append([])

    def handle_endtag(self, tag):
        if tag == self._in:
            body = "".join(self._buf)
            if tag == "script":
                self.scripts.append(body)
            else:
                self.refs.extend(m.group(2) or m.group(4) for m in CSS_URL.finditer(body))
            self._in = None
        if self._stack and self._stack[-1][0] == tag:
            _, a = self._stack.pop()
            text = "".join(self._text.pop()).strip()
            self.numbers.setdefault(a["data-metric"], (a.get("data-value"), text))

    def handle_data(self, data):
        if self._in:
            self._buf.append(data)
        for t in self._text:
            t.append(data)


def read_page(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def external_refs(html: str) -> list[str]:
    """Every reference that is neither a fragment (``#…``) nor a ``data:`` URI."""
    return [r for r in read_page(html).refs if not (r.startswith("#") or r.lower().startswith("data:"))]


def script_hashes(page: _Page) -> list[str]:
    return ["'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in page.scripts]
