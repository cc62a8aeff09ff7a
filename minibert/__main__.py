"""python -m minibert ...: the `minibert` command (torchrun needs a module: torchrun -m minibert)."""

import sys

from minibert.cli import main

sys.exit(main())
