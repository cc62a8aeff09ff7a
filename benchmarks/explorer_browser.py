"""Time the lesson-3 explorer in a real browser: JupyterLab in Chromium, click to new image.

Needs Chromium (apt-get install chromium) and playwright (pip install playwright); run from the
repository root with the course environment: python benchmarks/explorer_browser.py
Writes benchmarks/results/explorer_browser.json and a screenshot in /tmp/browser/.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

root = Path("/tmp/browser/nb")
root.mkdir(exist_ok=True)
nb = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "a1",
            "metadata": {},
            "outputs": [],
            "source": [
                "import minibert\nfrom minibert import assets\nfrom minibert.teaching.explorer import explore\n",
                "folder = assets.path('minilm')\n",
                "model = minibert.BertModel.from_pretrained(folder).eval()\n",
                "tok = minibert.BertTokenizer.from_pretrained(folder)\n",
                "explorer = explore(model, tok, 'The bank raised its interest rates.', 'We sat on the bank of the river.')\n",
                "explorer",
            ],
        }
    ],
    "metadata": {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
    },
    "nbformat": 4,
    "nbformat_minor": 5,
}
(root / "explorer_check.ipynb").write_text(json.dumps(nb))
server = subprocess.Popen(
    [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--port=8899",
        "--ServerApp.token=abc",
        "--allow-root",
        f"--notebook-dir={root}",
    ],
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
results = {}
try:
    time.sleep(8)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1600, "height": 1200})
        page.goto("http://localhost:8899/lab/tree/explorer_check.ipynb?token=abc")
        page.wait_for_selector(".jp-Notebook", timeout=60000)
        time.sleep(4)
        page.click(".jp-Cell .jp-InputArea-editor")
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector(".widget-output img", timeout=120000)
        time.sleep(1)

        def timed(action, what):
            before = page.eval_on_selector(".widget-output img", "e => e.src")
            start = time.perf_counter()
            action()
            page.wait_for_function(
                "b => { const i = document.querySelector('.widget-output img'); return i && i.src !== b; }",
                arg=before,
                timeout=30000,
            )
            seconds = time.perf_counter() - start
            results[what] = round(seconds, 3)
            print(f"{what}: {seconds:.2f} s", flush=True)

        selects = page.query_selector_all(".widget-dropdown select")
        layer_select, head_select = selects[0], selects[1]
        timed(lambda: head_select.select_option(label="head 5"), "heatmap, head 5")
        timed(lambda: head_select.select_option(label="all heads"), "heatmap, all heads")
        timed(lambda: layer_select.select_option(label="layer 3"), "all heads, layer 3")
        timed(lambda: page.click("button:has-text('model view')"), "model view")
        timed(lambda: page.click("button:has-text('head view')"), "head view, all heads")
        timed(lambda: head_select.select_option(label="head 2"), "head view, head 2")
        text_box = page.query_selector_all(".widget-text input")[0]
        timed(
            lambda: (
                text_box.fill("The river bank was muddy after the rain."),
                text_box.press("Enter"),
            ),
            "new text (model re-run)",
        )
        # a long text: a whole held-out article, cut to 512 positions, shown 40 tokens at a time
        from minibert import corpora

        article = " ".join(corpora.wikipedia_articles("heldout")[0].paragraphs)
        timed(lambda: (text_box.fill(article), text_box.press("Enter")), "long text (model re-run)")
        results["long text note"] = page.inner_text(".widget-html")
        timed(lambda: page.click("button:has-text('heatmap')"), "long text, heatmap, head 2")
        timed(lambda: head_select.select_option(label="all heads"), "long text, all heads")
        timed(lambda: page.click("button:has-text('model view')"), "long text, model view")
        timed(lambda: page.click("button:has-text('head view')"), "long text, head view")
        slider = page.query_selector(".widget-slider .noUi-handle, .widget-slider input")

        def move_window():
            slider.focus()
            page.keyboard.press("ArrowRight")

        timed(move_window, "long text, head view, window moved one token")
        page.screenshot(path="/tmp/browser/explorer_long.png")
        page.screenshot(path="/tmp/browser/explorer.png")
        browser.close()
finally:
    server.terminate()
Path(__file__).parent.joinpath("results", "explorer_browser.json").write_text(
    json.dumps({"seconds_click_to_new_image": results, "date": time.strftime("%Y-%m-%d")}, indent=1)
    + "\n"
)
