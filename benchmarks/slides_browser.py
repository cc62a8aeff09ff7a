"""Check the lessons' slide decks in a real browser, offline: python benchmarks/slides_browser.py [DIR]

Needs Chromium (apt-get install chromium) and playwright (pip install playwright); build the decks
first (`make slides`, into _slides/). Every deck is opened from disk (file://) in headless Chromium
with every request that is not a local file refused, as with no network, and must: start
reveal.js with its notes plugin, have as many screens as the deck's HTML and at most
minibert.teaching.slides.MAX_SCREENS, show every image, typeset its math with no MathJax error,
and step through every screen and fragment to the end with no console error or failed request.
Writes benchmarks/results/slides_browser.json and a screenshot of each deck's first screen with a
figure in /tmp/slides_shots/.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from minibert.teaching import lessons, slides

ROOT = Path(__file__).resolve().parent.parent
SHOTS = Path("/tmp/slides_shots")
CHROMIUM = "/usr/bin/chromium"

IMAGES_SHOWN = "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).length"
MATH = """() => [document.querySelectorAll('.MathJax, .MathJax_Display').length,
                 document.querySelectorAll('.MathJax_Error, merror').length]"""
WALK = """() => {  // every screen and fragment, front to back, as a lecturer's clicks would
  Reveal.slide(0, 0, -1);
  let clicks = 0, figures = -1;
  while (!Reveal.isLastSlide() || Reveal.availableFragments().next) {
    Reveal.next(); clicks += 1;
    if (figures < 0 && Reveal.getCurrentSlide().querySelector('img')) figures = Reveal.getIndices().h * 1000 + (Reveal.getIndices().v || 0);
    if (clicks > 2000) break;
  }
  return [clicks, figures];
}"""


def check_deck(page, url: str, expected: int) -> dict:
    """Open one deck, wait for reveal.js and MathJax, walk it, and report what went wrong."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    start = time.perf_counter()
    page.goto(url, wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30000)
    page.wait_for_function(
        "() => MathJax.Hub && MathJax.Hub.queue.pending === 0 && MathJax.isReady", timeout=60000
    )
    page.evaluate("() => new Promise(r => MathJax.Hub.Queue(r))")  # the typesetting is done
    typeset, math_errors = page.evaluate(MATH)
    clicks, first_figure = page.evaluate(WALK)
    report = {
        "seconds": round(time.perf_counter() - start, 2),
        "screens": page.evaluate("() => Reveal.getTotalSlides()"),
        "screens_in_html": expected,
        "clicks_to_the_end": clicks,
        "notes_plugin": page.evaluate("() => Reveal.hasPlugin('notes')"),
        "speaker_notes": page.evaluate("() => document.querySelectorAll('aside.notes').length"),
        "images": page.evaluate("() => document.images.length"),
        "images_not_shown": page.evaluate(IMAGES_SHOWN),
        "math_typeset": typeset,
        "math_errors": math_errors,
        "errors": errors,
    }
    if first_figure >= 0:
        h, v = divmod(first_figure, 1000)
        page.evaluate(f"() => Reveal.slide({h}, {v}, 99)")
        page.wait_for_timeout(800)  # the transition
        page.screenshot(path=str(SHOTS / Path(url).name.replace(".html", ".png")))
    return report


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "_slides").resolve()
    if not (folder / "index.html").exists():
        sys.exit(f"no decks in {folder}: build them first (make slides)")
    SHOTS.mkdir(exist_ok=True)
    outside: list[str] = []
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 800})

        def offline(route):  # no network: only the decks' own files load
            if route.request.url.startswith("file://"):
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        context.route("**/*", offline)
        for lesson in lessons.LESSONS:
            deck = folder / f"{Path(lesson.notebook).stem}.html"
            expected = slides.deck_screens(deck.read_text(encoding="utf-8"))
            page = context.new_page()
            results[deck.name] = check_deck(page, deck.as_uri(), expected)
            page.close()
        browser.close()
    bad = {
        name: r
        for name, r in results.items()
        if r["errors"] or r["images_not_shown"] or r["math_errors"] or not r["notes_plugin"]
        or r["screens"] != r["screens_in_html"] or r["screens"] > slides.MAX_SCREENS
    }  # fmt: skip
    summary = {
        "date": time.strftime("%Y-%m-%d"),
        "browser": "headless Chromium (Debian), every request but file:// refused",
        "decks": len(results),
        "decks_with_problems": bad,
        "requests_to_other_hosts": outside,
        "screens per deck": {name: r["screens"] for name, r in results.items()},
        "speaker notes per deck": {name: r["speaker_notes"] for name, r in results.items()},
        "images": sum(r["images"] for r in results.values()),
        "math elements typeset": sum(r["math_typeset"] for r in results.values()),
        "slowest deck (s)": max(r["seconds"] for r in results.values()),
    }
    (ROOT / "benchmarks" / "results" / "slides_browser.json").write_text(
        json.dumps(summary, indent=1) + "\n"
    )
    print(json.dumps(summary, indent=1))
    if bad or outside:
        sys.exit("the decks failed the browser check (above)")


if __name__ == "__main__":
    main()
