"""Plots for the course: attention maps that need no JavaScript, analysis, explorer, curves.

Every function returns a matplotlib Figure, so it shows in JupyterLab, VS Code, Colab and in
exported HTML or PDF, and saves to PNG or SVG with ``fig.savefig``. matplotlib is imported inside
the functions, so ``import minibert`` stays light.
"""

from __future__ import annotations

# --- Lesson 2: attention maps ------------------------------------------------------------------


# --- Lesson 3: attention analysis and the explorer ---------------------------------------------


# --- Lesson 4: training curves -----------------------------------------------------------------
