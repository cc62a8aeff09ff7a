"""benchmarks/compat.py: every Python's row of the set-up and tests, and the install page's table of them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("compat", ROOT / "benchmarks" / "compat.py")
compat = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compat)


def test_pytest_summaries_are_counted():
    assert compat.counts("3 failed, 900 passed, 2 skipped") == {
        "failed": 3,
        "passed": 900,
        "skipped": 2,
    }
    match = compat.SUMMARY.match("=== 974 passed, 1 warning in 712.40s (0:11:52) ===")
    assert match and compat.counts(match.group(1)) == {"passed": 974, "warning": 1}


def test_the_table_has_a_row_per_python_and_says_which_notebook_a_lower_bound_ran():
    results = {"runs": {
        "python3.12": {"python": "3.12.1", "torch": "2.13.0+cu130", "numpy": "2.5.5",
                       "unit": {"passed": 974}, "notebooks": {"passed": 194},
                       "setup_seconds": 156, "test_seconds": 3257, "environment_bytes": 5.9e9},
        "python3.11 + torch 2.6.0": {"python": "3.11.7", "torch": "2.6.0+cu124", "numpy": "2.3.0",
                                     "unit": {"passed": 970, "failed": 4},
                                     "notebooks": {"passed": 21},
                                     "notebook": "notebooks/03_encoder.ipynb",
                                     "setup_seconds": 240, "test_seconds": 900,
                                     "environment_bytes": 4.4e9},
        "python3.10": {"setup": "failed", "setup_seconds": 60},
    }}  # fmt: skip
    lines = compat.table(results).splitlines()
    assert len(lines) == 2 + 3
    assert "| 3.12.1 | 2.13.0+cu130 | 2.5.5 | 974 passed | 194 passed | 3 min | 54 min | 5.9 GB |" in lines  # fmt: skip
    assert any("(03_encoder only)" in line and "970 passed, 4 failed" in line for line in lines)
    assert "| python3.10 | set-up failed | | | | 60 s | | |" in lines


def test_the_install_page_shows_the_recorded_rows():
    """The site's install page puts the table in docs/install.md's place for it, from the JSON."""
    spec = importlib.util.spec_from_file_location("site_build", ROOT / "docs" / "site" / "build.py")
    site_build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site_build)
    recorded = ROOT / "benchmarks" / "results" / "compat.json"
    page = site_build._install_page(recorded)
    assert compat.table(json.loads(recorded.read_text(encoding="utf-8"))) in page
    assert site_build.COMPAT_TABLE in (ROOT / "docs" / "install.md").read_text(encoding="utf-8")


def test_a_rerun_of_the_failed_tests_shows_beside_the_first_count_and_finds_its_environment():
    row = {"python": "3.10.13", "torch": "2.13.0+cu130", "numpy": "2.2.6",
           "unit": {"failed": 6, "passed": 993}, "notebooks": {"passed": 194},
           "failed_rerun": {"tests": ["tests/test_site.py::test_x"], "result": {"passed": 6}},
           "setup_seconds": 169, "test_seconds": 3855, "environment_bytes": 5.8e9}  # fmt: skip
    (line,) = compat.table({"runs": {"python3.10": row}}).splitlines()[2:]
    assert "| 6 failed, 993 passed; those failed, again: 6 passed | 194 passed |" in line
    assert compat.venv_of("python3.10") == ROOT / "build" / "compat" / "310"
    assert compat.venv_of("python3.11 + torch 2.6.0").name == "311-torch2.6.0"
