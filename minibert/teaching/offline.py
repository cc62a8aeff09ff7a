"""What the course's web pages (the site, the slide decks) need to work from disk with no network:
MathJax copied from a package, and a check that a page loads nothing from another host."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote


def copy_mathjax(target: Path) -> None:
    """MathJax 2 from the jupyter-server-mathjax package into the folder target (no CDN)."""
    import jupyter_server_mathjax

    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(static, target, ignore=shutil.ignore_patterns("*.md"))
    # MathJax's HTML-CSS output declares a font that never loads, MathJax_Blank, as
    # url('about:blank'): from a page opened from disk Chromium refuses that request with a console
    # error. local() names a font that is not there either, with no request and no error.
    config = target / "config" / "TeX-AMS-MML_HTMLorMML-full.js"
    text = config.read_text(encoding="utf-8")
    blank = '"font-family":"MathJax_Blank",src:"url(\'about:blank\')"'
    if blank not in text:
        raise RuntimeError(f"{config} no longer declares MathJax_Blank as expected")
    text = text.replace(blank, blank.replace("url('about:blank')", "local('MathJax_Blank')"))
    # The hidden MathML kept for screen readers names MathJax's TeX web fonts (-WEB) as fallbacks
    # for script, calligraphic, fraktur and AMS letters; the package ships only STIX-Web, so each
    # would be a failed request: the system's fonts serve that invisible text instead.
    text, dropped = re.subn(r'(font-family":"MathJax_\w+), MathJax_[\w-]+-WEB"', r'\1"', text)
    if not dropped:
        raise RuntimeError(f"{config} no longer names MathJax's web fonts as expected")
    config.write_text(text)


class Links(HTMLParser):
    """Every resource a page loads (src, stylesheet href) and every link it follows (a href)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.follows: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag in ("img", "script", "iframe", "source", "embed", "audio", "video") and a.get("src"):
            self.loads.append(a["src"])
        elif tag == "link" and a.get("href"):
            self.loads.append(a["href"])
        elif tag == "a" and a.get("href"):
            self.follows.append(a["href"])


def load_problems(page: Path, links: Links, name: str) -> list[str]:
    """What page (parsed into links) loads from another host or from a file that is not there."""
    problems = []
    for url in links.loads:
        if re.match(r"(https?:)?//", url):
            problems.append(f"{name} loads {url} from another host")
        elif url.startswith(("data:", "#")):
            continue  # inside the page
        elif not (page.parent / unquote(url.split("?")[0])).exists():
            problems.append(f"{name} loads a missing file {url}")
    return problems
