"""The site's results page (docs/site/results.py): generated from benchmarks/results/*.json, one
section per file, nothing typed by hand; and the install page's table from compat.json."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def _module(name: str, path: Path):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


results = _module("site_results", ROOT / "docs" / "site" / "results.py")
site_build = _module("site_build", ROOT / "docs" / "site" / "build.py")


def test_every_results_file_has_a_section_written_for_it():
    """A new benchmarks/results/*.json needs its function in results.SECTIONS (one entry): without
    it the page lists its raw values under a warning, and this test fails until it is written."""
    names = sorted(p.name for p in RESULTS.glob("*.json"))
    missing = [name for name in names if name not in results.SECTIONS]
    assert not missing, f"no section in docs/site/results.py SECTIONS for {missing}"
    stale = [name for name in results.SECTIONS if not (RESULTS / name).exists()]
    assert not stale, f"SECTIONS names results files that do not exist: {stale}"


def test_the_page_has_one_section_per_file_and_every_figure():
    page = results.page()
    names = sorted(p.name for p in RESULTS.glob("*.json"))
    for name in names:
        assert page.count(f"({results.anchor(name)})=\n## ") == 1, name
        assert f"*Generated from `benchmarks/results/{name}`.*" in page
    assert len(set(map(results.anchor, names))) == len(names), "two files, one anchor"
    for figure in RESULTS.glob("*.png"):
        assert f"](results/{figure.name})" in page, f"{figure.name} is on no section"
    assert "Not yet described" not in page
    for section in page.split("\n(")[1:]:  # each says what, where and how to reproduce it
        for fact in ("**What was measured.** ", "**Where.** ", "**To reproduce.** `"):
            assert fact in section, f"{section[:40]}: no {fact}"


def _copy_results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    for path in RESULTS.iterdir():
        if path.suffix in (".json", ".png") and path.name != "finetuning_shapes.json":
            shutil.copy(path, folder / path.name)
    (folder / "finetuning_shapes.json").symlink_to(RESULTS / "finetuning_shapes.json")  # 16 MB
    return folder


def test_a_changed_number_in_a_results_file_changes_the_page(tmp_path):
    folder = _copy_results(tmp_path)
    before = results.page(folder)
    data = json.loads((folder / "wiki_swag.json").read_text())
    row = "| minilm minus course NSP head | +18.4 [+11.9, +24.9] | p < 0.001 |"
    assert row in before
    data["comparisons"]["minilm vs the better named baseline"].update(
        difference=0.0421, low=0.0123, high=0.0789, p=0.02
    )
    (folder / "wiki_swag.json").write_text(json.dumps(data))
    data = json.loads((folder / "distributed_throughput.json").read_text())
    data["runs"][2]["sequences_per_second"] = 97.5
    (folder / "distributed_throughput.json").write_text(json.dumps(data))
    after = results.page(folder)
    assert row not in after
    assert "| minilm minus course NSP head | +4.2 [+1.2, +7.9] | p = 0.02 |" in after
    assert "| 2 | 1 | 22.8 | 97.5 | 7.70471 |" in after and "| 56.1 |" not in after
    site = tmp_path / "sources"  # what the site build writes: the page and its figures
    results.write(site, folder)
    assert (site / "results.md").read_text(encoding="utf-8") == after
    assert (site / "results" / "finetuning_shapes.png").read_bytes() == (
        RESULTS / "finetuning_shapes.png"
    ).read_bytes()


def test_a_file_without_a_section_is_listed_with_a_warning_not_left_out(tmp_path):
    folder = _copy_results(tmp_path)
    new = {"what": "a new benchmark", "machine": "a lent GPU", "runs": [{"tokens_per_s": 123456}]}
    (folder / "new_suite.json").write_text(json.dumps(new))
    page = results.page(folder)
    section = page[page.index("(new-suite)=") :]
    assert "new_suite.json has no section in docs/site/results.py yet." in section
    assert "| `runs[0].tokens_per_s` | 123456 |" in section and "**Where.** a lent GPU" in section


def test_the_numbers_are_the_files_own():
    """A few numbers on the page against the JSON they come from, so a formatting slip shows."""
    page = results.page()
    shapes = json.loads((RESULTS / "finetuning_shapes.json").read_text(encoding="utf-8"))
    qa = shapes["table"]["wiki-qa"]["minilm, 30 epochs"]["all"]
    assert f"| minilm, 30 epochs | - | - | {qa['mean']:.1f} ± {qa['std']:.1f} |" in page
    speed = json.loads((RESULTS / "tokenizer_speed.json").read_text(encoding="utf-8"))
    ours = speed["results"][0]["implementations"]["minibert (warm cache)"]
    assert f"| minibert (warm cache) | {ours['median_s']:.3f} | {ours['texts_per_s']:,} |" in page


def test_the_install_page_shows_the_recorded_pythons():
    compat = _module("benchmarks_compat", ROOT / "benchmarks" / "compat.py")
    recorded = json.loads((RESULTS / "compat.json").read_text(encoding="utf-8"))
    page = site_build._install_page()
    assert compat.table(recorded) in page
    assert site_build.COMPAT_TABLE not in page
    for topic in ("## CPU or CUDA build of torch", "## With conda", "Windows", "Colab",
                  "shared server"):  # fmt: skip
        assert topic in page


@pytest.mark.parametrize("name", sorted(results.SECTIONS))
def test_each_section_renders_from_its_file(name):
    data = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    text = results.section_text(name, data)
    assert re.search(r"^\| .+ \|$", text, flags=re.MULTILINE), f"{name}: no table of numbers"
