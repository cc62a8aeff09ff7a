"""Sphinx configuration of the course site (built by docs/site/build.py; `make site`).

The pages are the student edition of the notebooks (stored outputs, never re-executed), the
install page, the results page (generated from benchmarks/results/*.json by results.py), the
package's guide, the teacher's guide, the data page and an API reference from the docstrings. Everything a
page needs is inside the site: MathJax comes from the jupyter-server-mathjax package (no CDN),
the theme (furo) uses the system's fonts.
"""

project = "minibert"
author = "the minibert authors"
copyright = "the minibert authors; code MIT, data and weights under their own licences"
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
viewcode_follow_imported_members = False  # a re-exported name links to its own module only
exclude_patterns = ["_build", "**.ipynb_checkpoints", "student"]  # student/: the downloads
html_theme = "furo"
html_title = "minibert: BERT from first principles"
html_static_path = []
html_show_sourcelink = False
html_copy_source = False  # the notebooks are downloadable beside their pages already

# notebooks: shown as stored, never executed; the widget's static PNG instead of the widget view
nb_execution_mode = "off"
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_merge_streams = True
nb_ipywidgets_js = {}  # no widget JavaScript from a CDN: the site shows the widgets' PNGs
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]

# MathJax 2 from the site itself (build.py copies jupyter-server-mathjax's files to mathjax/)
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {
    # myst-nb marks notebook pages tex2jax_ignore; the math Sphinx wrote is class "math"
    "tex2jax": {
        "inlineMath": [["\\(", "\\)"]],
        "displayMath": [["\\[", "\\]"]],
        "processClass": "tex2jax_process|mathjax_process|math|output_area",
        "ignoreClass": "tex2jax_ignore|mathjax_ignore",
    },
    # no fast preview: it draws with MathJax's TeX fonts, which the package does not ship
    "fast-preview": {"disabled": True},
    "messageStyle": "none",  # no "Typesetting math: 100%" box in the corner
    # the package ships the STIX-Web fonts only: use them, never look for the TeX ones
    "HTML-CSS": {
        "availableFonts": ["STIX-Web"],
        "preferredFont": "STIX-Web",
        "webFont": "STIX-Web",
        "imageFont": None,
    },
}

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}


def _literal_blocks(app, what, name, obj, options, lines):
    """The package's docstrings show code as an indented block after a blank line (no ``::``):
    mark each such block literal, so it renders as code, not as a quotation."""
    for i in range(len(lines) - 2, 0, -1):
        before, blank, block = lines[i - 1], lines[i], lines[i + 1]
        indent = len(before) - len(before.lstrip())
        if blank.strip() or not block.strip() or not before.strip():
            continue
        if len(block) - len(block.lstrip()) <= indent or before.rstrip().endswith("::"):
            continue
        if before.rstrip().endswith(":"):
            lines[i - 1] = before.rstrip() + ":"  # "text:" -> "text::" (shown as "text:")
        else:
            lines[i:i] = ["", " " * indent + "::"]  # a literal block after a plain paragraph


def _only_modules_with_source(app):
    """Drop the modules viewcode found no source for (such as builtins) before it writes its
    pages: Sphinx before 8.2 (the newest for Python 3.10) lists them in the index of module code,
    linking to pages it never writes."""
    modules = getattr(app.builder.env, "_viewcode_modules", {})
    for name in [name for name, entry in modules.items() if not entry]:
        del modules[name]
    return []


def setup(app):
    app.connect("autodoc-process-docstring", _literal_blocks)
    app.connect("html-collect-pages", _only_modules_with_source, priority=400)  # before viewcode
