"""Check the built course site in a real browser, offline: python benchmarks/site_browser.py [SITE]

Needs Chromium (apt-get install chromium) and playwright (pip install playwright); build the site
first (`make site`, into _site/). Every page is opened from disk (file://) in headless Chromium
with every request that is not a local file refused, as with no network, and must: load with no
console error and no failed request, show every image, typeset its math (MathJax, from the site
itself) and, on the search page, find lessons. Writes benchmarks/results/site_browser.json and
screenshots in /tmp/site_shots/.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
SHOTS = Path("/tmp/site_shots")
CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = (
    "index.html",
    "results.html",
    "install.html",
    "notebooks/02_attention_math.html",
    "notebooks/03_encoder.html",
    "api.html",
)

IMAGES_SHOWN = "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).length"
MATH_TYPESET = """() => {
  const math = [...document.querySelectorAll('.math.notranslate')];  // what Sphinx wrote
  const left = math.filter(m => !m.querySelector('.MathJax, .MathJax_Display')).length;
  return [math.length, math.length - left, document.querySelectorAll('.MathJax_Error, merror').length];
}"""


def check_page(page, url: str) -> dict:
    """Open url, wait for MathJax, and report what went wrong."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    start = time.perf_counter()
    page.goto(url, wait_until="load")
    if page.evaluate("() => typeof MathJax !== 'undefined'"):
        page.wait_for_function(
            "() => MathJax.Hub && MathJax.Hub.queue.pending === 0 && MathJax.isReady", timeout=60000
        )
        page.evaluate("() => new Promise(r => MathJax.Hub.Queue(r))")  # the typesetting is done
    raw, typeset, math_errors = page.evaluate(MATH_TYPESET)
    report = {
        "seconds": round(time.perf_counter() - start, 2),
        "images": page.evaluate("() => document.images.length"),
        "images_not_shown": page.evaluate(IMAGES_SHOWN),
        "math": raw,
        "math_typeset": typeset,
        "math_errors": math_errors,
        "errors": errors,
    }
    return report


def main() -> None:
    site = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "_site").resolve()
    if not (site / "index.html").exists():
        sys.exit(f"no site in {site}: build it first (make site)")
    SHOTS.mkdir(exist_ok=True)
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if "_modules" not in p.parts and "_sources" not in p.parts)  # fmt: skip
    outside: list[str] = []
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1400, "height": 1000})

        def offline(route):  # no network: only the site's own files load
            if route.request.url.startswith("file://"):
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        context.route("**/*", offline)
        for name in pages:
            page = context.new_page()
            results[name] = check_page(page, (site / name).as_uri())
            if name in SCREENSHOTS:
                page.screenshot(path=str(SHOTS / name.replace("/", "_").replace(".html", ".png")))
            page.close()
        page = context.new_page()
        page.goto((site / "search.html").as_uri() + "?q=attention+mask", wait_until="load")
        page.wait_for_selector("ul.search li", timeout=30000)
        found = page.eval_on_selector_all("ul.search li a", "els => els.map(e => e.textContent)")
        page.screenshot(path=str(SHOTS / "search.png"))
        browser.close()
    bad = {
        name: r
        for name, r in results.items()
        if r["errors"] or r["images_not_shown"] or r["math_errors"] or r["math_typeset"] < r["math"]
    }
    summary = {
        "date": time.strftime("%Y-%m-%d"),
        "pages": len(results),
        "pages_with_problems": bad,
        "requests_to_other_hosts": outside,
        "search 'attention mask', first results": found[:5],
        "search results": len(found),
        "images": sum(r["images"] for r in results.values()),
        "math elements typeset": sum(r["math_typeset"] for r in results.values()),
        "slowest page (s)": max(r["seconds"] for r in results.values()),
    }
    (ROOT / "benchmarks" / "results" / "site_browser.json").write_text(
        json.dumps(summary, indent=1) + "\n"
    )
    print(json.dumps(summary, indent=1))
    if bad or outside or not found:
        sys.exit("the site failed the browser check (above)")


if __name__ == "__main__":
    main()
