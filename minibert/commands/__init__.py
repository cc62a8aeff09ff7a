"""The commands layer: argparse lives here and in ``minibert.cli`` only, above the library and the
teaching kit, which it reads. Each module declares its sub-commands' arguments and runs them by
calling the library or the kit; errors become one line and an exit code.

- ``flags``: the recipes' flags, made from the options' declarations (``minibert.options``);
- ``models``: ``minibert fill-mask``, ``classify``, ``tag`` (a trained folder answering; the
  command is chosen by the folder's task or its config.json's architectures);
- ``asset_cache``: ``minibert fetch``, ``minibert assets list|verify|fetch|path`` (the cache of
  ``minibert.assets``);
- ``course``: ``minibert course`` (JupyterLab on the notebooks, or their student edition);
- ``assignment``: ``minibert assignment list|new|grade``;
- ``search``: ``minibert search`` (an encoder finds the Wikipedia paragraphs for a query);
- ``ask``: ``minibert ask`` (a retriever and a reader answer a question from Wikipedia).

Each module is imported the first time it is used: ``minibert.commands.models``.
"""

from __future__ import annotations

from minibert.utils import lazy_submodules

__all__ = ["ask", "asset_cache", "assignment", "course", "flags", "models", "search"]


__getattr__, __dir__ = lazy_submodules(__name__, __all__)
