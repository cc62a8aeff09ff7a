"""The commands layer: argparse lives here and in ``minibert.cli`` only, above the library and the
teaching kit. Each module declares its sub-commands' arguments and runs them by calling the
library; errors become one line and an exit code.

- ``models``: ``minibert fill-mask``, ``minibert classify``, ``minibert tag`` (a trained folder
  answering; the command is chosen by the folder's task or its config.json's architectures).
"""
