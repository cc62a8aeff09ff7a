"""The package as a whole: a light import, the public API, seeds, devices, the environment files."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import minibert

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("matplotlib", "gensim", "transformers", "ipywidgets")


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return {m.split(".")[0] for m in done.stdout.split()}


@pytest.mark.slow
def test_import_is_light():
    loaded = _loaded_after("import minibert\n" + "\n".join(f"import minibert.{m}" for m in MODULES))
    assert not loaded & set(HEAVY), f"importing minibert loaded {sorted(loaded & set(HEAVY))}"
    assert "torch" not in _loaded_after("import minibert")  # the bare package is instant


@pytest.mark.slow
def test_heavy_modules_load_when_needed():
    # gensim parses the dump the first time only: later processes read the articles it kept
    parse = "import minibert.corpora as c\nc.wikipedia_articles('heldout')"
    first = _loaded_after(f"{parse}\nnext(c.read_wikipedia_dump(c.assets.path('wikipedia')))")
    assert "gensim" in first and "matplotlib" not in first
    assert "gensim" not in _loaded_after(parse)


def test_public_api_resolves():
    for name in minibert._EXPORTS:
        assert getattr(minibert, name) is not None, name
    for name in minibert._SUBMODULES:  # every listed module exists: none may be skipped
        assert getattr(minibert, name).__name__ == f"minibert.{name}"
    for name, module in minibert._TEACHING.items():  # the kit's modules the lessons call mb.NAME
        assert getattr(minibert, name).__name__ == f"minibert.{module}" and module in MODULES
    assert sorted(minibert.__all__) == sorted(
        {*minibert._EXPORTS, *minibert._SUBMODULES, *minibert._TEACHING}
    )


def test_star_import_gives_every_name():
    namespace: dict = {}
    exec("from minibert import *", namespace)
    assert set(minibert.__all__) <= set(namespace)


def _module_name(file: Path) -> str:
    """'training' for minibert/training.py, 'teaching.exercises.masking' for
    .../teaching/exercises/masking.py, 'recipes' for a package's minibert/recipes/__init__.py."""
    parts = file.relative_to(ROOT / "minibert").with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {
    _module_name(f): f
    for f in (ROOT / "minibert").rglob("*.py")
    if f != ROOT / "minibert" / "__init__.py"  # the package itself: the lazy public API
    and f.name != "__main__.py"  # `python -m minibert` runs the CLI
    and "assignment_files" not in f.parts  # students' skeletons
}
MODULES = sorted(FILES)


def _package_imports() -> dict[str, set[str]]:
    """module -> the package modules it imports (anywhere in the file, deferred imports too)."""
    import ast

    graph = {}
    for name in MODULES:
        file = FILES[name]
        found = set()
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("minibert"):
                inside = node.module.split(".")[1:]  # minibert.teaching -> ["teaching"]
                found |= {".".join([*inside, a.name]) for a in node.names}  # a module
                found.add(".".join(inside))  # or names from a module
            elif isinstance(node, ast.Import):
                found |= {
                    a.name.split(".", 1)[1] for a in node.names if a.name.startswith("minibert.")
                }
        graph[name] = {m for m in found if m in MODULES} - {name}
    return graph


def _as_imported(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """graph with the packages each import runs first: importing teaching.assignments.worker runs
    teaching/assignments/__init__.py before worker.py, so it imports teaching.assignments too. A
    module's own packages are left out: they are already running when it is imported."""

    def packages(module: str) -> set[str]:
        parts = module.split(".")
        return {".".join(parts[:i]) for i in range(1, len(parts))} & set(graph)

    return {
        module: {p for other in others for p in (other, *packages(other))}
        - packages(module)
        - {module}
        for module, others in graph.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """The first import cycle in graph (a -> b -> ... -> a), or None."""
    done, path = set(), []

    def visit(module: str) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        path.append(module)
        for other in sorted(graph[module]):
            if cycle := visit(other):
                return cycle
        path.pop()
        done.add(module)
        return None

    return next(filter(None, map(visit, sorted(graph))), None)


def test_package_imports_have_no_cycle():
    """Deferred imports (inside a function) count as imports at the top would: none is exempt,
    and none may hide a cycle, between modules or through a package's __init__."""
    graph = _package_imports()
    assert graph["checkpoint"] and graph["model"]  # the walk sees imports at all
    deferred = {"attention", "config", "model"}  # checks.py imports these inside its functions
    assert deferred <= graph["teaching.assignments.checks"]  # the walk sees deferred ones too
    cycle = _cycle(_as_imported(graph))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_cycle_through_a_packages_init_is_found():
    """b.x imports a.y inside a function, and a's __init__ imports b (through a.z): no circle from
    module to module, but importing a.y runs a/__init__.py first, and a circle closes. This is
    how teaching.exercises.classifier once reached teaching.assignments.worker (#55)."""
    graph = {"a": {"a.z"}, "a.z": {"b"}, "a.y": set(), "b": {"b.x"}, "b.x": {"a.y"}}
    assert _cycle(graph) is None
    assert _cycle(_as_imported(graph)) == ["a", "a.z", "b", "b.x", "a"]


def test_imports_follow_the_one_way_data_flow():
    graph = _package_imports()
    readers = {"teaching.viz", "teaching.exercises", "inference", "recipes", "cli"}
    for module in ("model", "training", "checkpoint", "pretraining", "tokenization", "config"):
        assert not graph[module] & readers, f"{module} imports {sorted(graph[module] & readers)}"
    assert graph["model"] <= {"config", "attention", "checkpoint"}
    assert graph["checkpoint"] <= {"config", "utils"}  # knows no model class
    assert graph["training"] <= {
        *("utils", "options", "config", "distributed", "run_state", "label_counts")
    }
    assert graph["label_counts"] <= {"config"}  # counting labels knows no model, no task
    assert graph["run_state"] <= {"utils"}  # the loop's state knows no task either
    assert graph["distributed"] == set()  # torch.distributed only
    assert graph["options"] == set()  # the declarations' machinery knows no option


def test_the_teaching_kit_reads_the_library_never_the_reverse():
    """Three layers: the library; the teaching kit, which reads it; the commands (cli and
    minibert.commands), which read both. Nothing imports a layer above its own."""
    graph = _package_imports()
    kit = {m for m in MODULES if m.split(".")[0] == "teaching"}
    commands = {m for m in MODULES if m.split(".")[0] in ("cli", "commands")}
    assert {"teaching.exercises", "teaching.assignments", "teaching.lessons"} <= kit
    graders = [m for m in kit if m.startswith("teaching.assignments")]
    assert any(graph[m] & {"attention", "config", "model"} for m in graders)  # the kit reads it
    library = set(MODULES) - kit - commands
    for module in sorted(library):
        assert not graph[module] & (kit | commands), (
            f"{module} imports {graph[module] & (kit | commands)}"
        )
    for module in sorted(kit):
        assert not graph[module] & commands, f"{module} imports {graph[module] & commands}"
    with pytest.raises(AttributeError, match="no attribute 'BertForEverything'"):
        minibert.BertForEverything  # noqa: B018


def test_set_seed_makes_random_draws_repeat():
    minibert.set_seed(123)
    first = (torch.rand(3), __import__("numpy").random.rand(2), __import__("random").random())
    minibert.set_seed(123)
    second = (torch.rand(3), __import__("numpy").random.rand(2), __import__("random").random())
    assert torch.equal(first[0], second[0])
    assert (first[1] == second[1]).all() and first[2] == second[2]
    with pytest.raises(TypeError, match="int"):
        minibert.set_seed(1.5)


def test_default_device_is_cpu_without_a_gpu():
    device = minibert.default_device()
    if torch.cuda.is_available():
        assert device.type == "cuda"
    else:
        assert device.type in ("cpu", "mps")
        assert torch.zeros(1, device=device).device.type == device.type


def _base_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement.strip(), maxsplit=1)[0].lower()


def test_environment_yml_names_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_base_name(r) for r in project["dependencies"]}
    wanted |= {_base_name(r) for r in project["optional-dependencies"]["course"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {"pytorch": "torch"}  # conda-forge's name for the same package
    names, pip_lines = set(), []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip_lines += dep["pip"]
        elif _base_name(dep) not in ("python", "pip"):
            names.add(conda.get(_base_name(dep), _base_name(dep)))
    assert names == wanted
    assert env["name"] == "minibert"
    assert "python=3.11" in env["dependencies"]
    assert "-e .[course]" in pip_lines


def test_dependencies_have_lower_bounds_only():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    every = project["dependencies"] + [
        r for extra in project["optional-dependencies"].values() for r in extra
    ]
    for requirement in every:
        version_part = requirement.split(";")[0]  # environment markers may compare versions
        assert "==" not in version_part and "<" not in version_part, requirement
    assert "torch>=2.6" in project["dependencies"]  # the lower bound tested (compat.json)
    recorded = json.loads((ROOT / "benchmarks" / "results" / "compat.json").read_text())
    assert "python3.11 + torch 2.6.0" in recorded["runs"]
    assert project["requires-python"] == ">=3.10"


@pytest.mark.slow
def test_console_script_fetch_and_assets():
    done = subprocess.run(
        [sys.executable, "-m", "minibert.cli", "assets", "verify"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": ok") == len(minibert.assets.ASSETS)
    done = subprocess.run(
        [sys.executable, "-m", "minibert.cli", "fetch", "minilm", "--quiet"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "minibert.cli", "fetch", "imdb"], capture_output=True, text=True
    )
    assert done.returncode == 1 and "known assets" in done.stderr


def test_course_map_has_one_source_the_readme_and_the_notebooks_agree():
    from minibert.teaching import lessons

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for lesson in lessons.LESSONS:  # the README's one line a lesson: tests/test_readme.py
        assert f"| [{lesson.number} {lesson.title}](notebooks/{lesson.notebook}) |" in readme, (
            f"README's course map lacks {lesson.notebook} as minibert.teaching.lessons has it"
        )
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert [lesson.notebook for lesson in lessons.LESSONS] == notebooks
    start = json.loads((ROOT / "notebooks" / "00_start_here.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in start["cells"]]
    assert any("lessons.course_map(" in s for s in sources), "notebook 00 shows the map from code"
    assert not any("| 01 Tokens and segments |" in s for s in sources), "no hand-copied map"


def test_the_course_maps_minutes_are_the_measured_run_times():
    """Each lesson's minutes: its measured run time rounded up to the half minute; at most 5."""
    import math

    from minibert.teaching import lessons

    measured = json.loads((ROOT / "benchmarks" / "results" / "notebook_times.json").read_text())
    for lesson in lessons.LESSONS:
        seconds = measured["seconds"][lesson.notebook]  # python benchmarks/notebook_times.py
        assert seconds <= 300, f"{lesson.notebook} runs {seconds:.0f} s: over one class's 5 minutes"
        assert lesson.minutes == max(0.5, math.ceil(seconds / 30) / 2), (
            f"{lesson.notebook}: the map says {lesson.minutes:g} minutes, measured {seconds:.0f} s"
        )


def test_the_sizing_table_counts_cores_and_memory_for_a_class():
    """lessons.sizing_table: students per core within the window, per GB, what a class needs,
    and the cells over the run-ahead threshold, from a notebook_resources.json-shaped dict."""
    from minibert.teaching import lessons

    measured = {
        "notebooks": {
            "00_start_here.ipynb": {"cpu_s": 6.0, "peak_rss_mb": 512, "cells_s": {"3": 2.0}},
            "06_fine_tuning.ipynb": {
                "cpu_s": 300.0,
                "peak_rss_mb": 2048,
                "cells_s": {"5": 95.0, "7": 19.9, "13": 40.0},
            },
        },  # fmt: skip
        "machine": {"processor": "x86_64", "cpus": 2, "memory_gb": 24},
        "date": "2026-11-26",
    }
    rows = lessons.sizing_table(measured, students=60, window_s=600).splitlines()
    assert rows[2] == "| 00 Start here | 512 MB | 6 | 100.0 | 2.0 | 1 core, 30 GB | 128 | none |"
    assert rows[3] == (  # 16 cores: 32 students within 10 minutes; 64 GB: 32 of 2 GB
        "| 06 Fine-tuning | 2,048 MB | 300 | 2.0 | 0.5 | 30 cores, 120 GB | 32 "
        "| [5] (95 s), [13] (40 s) |"
    )
    assert "x86_64, 2 CPUs, 24 GB" in rows[-1]


def test_the_guides_sizing_table_is_the_measured_one():
    """docs/teaching.md's shared-server table is lessons.sizing_table of the committed
    measurements (python benchmarks/notebook_resources.py), with a row for every lesson."""
    from minibert.teaching import lessons

    path = ROOT / "benchmarks" / "results" / "notebook_resources.json"
    measured = json.loads(path.read_text())
    assert sorted(measured["notebooks"]) == sorted(lesson.notebook for lesson in lessons.LESSONS)
    guide = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    start = guide.index("\n", guide.index("<!-- sizing table:")) + 1
    table = guide[start : guide.index("<!-- end of the sizing table -->")]
    together = json.loads((path.parent / "class_at_once.json").read_text())
    assert table.strip() == lessons.sizing_table(measured, together=together).strip()


def test_a_class_at_once_counts_cores_with_the_best_measured_thread_setting():
    """lessons.sizing_table with class_at_once.json: the cores columns use the setting whose
    kernels came nearest their fair share, each student's CPU seconds times that slowdown."""
    from minibert.teaching import lessons

    measured = {
        "notebooks": {"06_fine_tuning.ipynb": {"cpu_s": 300.0, "peak_rss_mb": 2048, "cells_s": {}}},
        "machine": {"cpus": 2},
    }
    together = {
        "notebook": "04_masked_language_model.ipynb",
        "date": "2026-11-29",
        "machine": {"cpus": 2},
        "runs": {
            "default": [{"kernels": 1}, {"kernels": 4, "over_fair_share": 7.26}],
            "one": [{"kernels": 1}, {"kernels": 4, "over_fair_share": 1.5}],
        },
    }
    assert lessons.class_slowdown(together) == ("one", 1.5)
    rows = lessons.sizing_table(measured, students=60, window_s=600, together=together).splitlines()
    # 450 CPU seconds a student in a class: 600 / 450 = 1.3 per core, 45 cores for 60, 21 on 16
    assert (
        rows[2] == "| 06 Fine-tuning | 2,048 MB | 300 | 1.3 | 0.5 | 45 cores, 120 GB | 21 | none |"
    )
    assert (
        "torch's default threads 7.26x, one thread per kernel (OMP_NUM_THREADS=1) 1.50x" in rows[-1]
    )
    assert "times 1.50" in rows[-1]
    # a setting slower than its fair share never makes the class cheaper than one student alone
    together["runs"]["one"][1]["over_fair_share"] = 0.8
    assert lessons.class_slowdown(together) == ("one", 1.0)


def test_every_module_is_reachable_as_an_attribute():
    import minibert

    assert sorted(minibert._SUBMODULES) == sorted({m.split(".")[0] for m in MODULES} | {"teaching"})
    for name in MODULES:  # mb.recipes, mb.teaching.exercises
        found = minibert
        for part in name.split("."):
            found = getattr(found, part)
        assert found.__name__ == f"minibert.{name}"


def _functions(text: str):
    """(function node, its parameters' names without self and cls, {parameter: names it is
    unpacked into}) for every function of a module; a parameter unpacked into names anywhere in
    its function (``a, b, c = packed``, in a nested block too) is a tuple that packs values."""
    import ast

    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
        names = [p.arg for p in params if p.arg not in ("self", "cls")]
        unpacked = {}
        for inner in ast.walk(node):
            if not isinstance(inner, ast.Assign) or len(inner.targets) != 1:
                continue
            target, value = inner.targets[0], inner.value
            if isinstance(value, ast.Name) and value.id in names and isinstance(target, ast.Tuple):
                unpacked[value.id] = max(unpacked.get(value.id, 0), len(target.elts))
        yield node, names, unpacked


def test_no_function_is_over_80_lines_or_10_parameters_and_no_module_over_700_lines():
    """The parameters are counted as the values a function receives: a tuple it unpacks into
    three names counts as three (#55)."""
    too_big = []
    for name in MODULES:
        text = FILES[name].read_text(encoding="utf-8")
        if len(text.splitlines()) > 700:
            too_big.append(f"{name}: {len(text.splitlines())} lines")
        for node, params, unpacked in _functions(text):
            values = len(params) + sum(n - 1 for n in unpacked.values())
            lines = node.end_lineno - node.lineno + 1
            if lines > 80 or values > 10:
                too_big.append(f"{name}.{node.name}: {lines} lines, {values} parameters")
    assert not too_big, too_big


def test_limits_are_kept_in_spirit_no_tuple_packing_and_few_format_exceptions():
    """A function that needs many values takes a dataclass, not a tuple it unpacks into three or
    more names, wherever in the function; `# fmt: skip` only beside a hand-aligned table, at most
    20 in the package (#55)."""
    skips, packed = 0, []
    for name in MODULES:
        text = FILES[name].read_text(encoding="utf-8")
        skips += sum(line.rstrip().endswith("# fmt: skip") for line in text.splitlines())
        for node, _, unpacked in _functions(text):
            packed += [f"{name}.{node.name} unpacks {p}" for p, n in unpacked.items() if n >= 3]
    assert not packed, packed
    assert skips <= 20, f"{skips} `# fmt: skip` markers in minibert/: at most 20, beside tables"


def test_argparse_lives_in_the_commands_layer_only():
    import ast

    importers = []
    for name in MODULES:
        tree = ast.parse(FILES[name].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "argparse"
                or "argparse" in names
            ):
                importers.append(name)
    assert importers, "the walk sees imports of argparse at all"
    assert {m.split(".")[0] for m in importers} <= {"cli", "commands"}, sorted(importers)


@pytest.mark.slow
def test_a_built_wheel_holds_every_sub_package_and_the_package_data(tmp_path):
    # `pip install .` (not editable) installs what the wheel holds: once it held minibert/*.py only
    import shutil
    import zipfile

    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "minibert", source / "minibert",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    # this environment's setuptools builds it offline when it can make wheels by itself (70.1 and
    # later; a new venv of Python 3.11 has 65.5, which needs the wheel package); else pip fetches
    # the build-system's setuptools as `pip install .` does
    from importlib.metadata import version

    own = tuple(int(n) for n in version("setuptools").split(".")[:2]) >= (70, 1)
    isolation = ["--no-build-isolation"] if own else []
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q",
         "-w", str(tmp_path / "wheel"), str(source)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("minibert-*.whl")
    held = set(zipfile.ZipFile(wheel).namelist())
    package = ROOT / "minibert"
    wanted = {
        str(path.relative_to(ROOT))
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert wanted - held == set()


@pytest.mark.slow
def test_the_version_a_teacher_pins_is_one_version():
    """`minibert --version`, minibert.__version__, pyproject.toml and CHANGELOG.md's newest
    release agree (#54)."""
    import re

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "minibert", "--version"], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == f"minibert {minibert.__version__}"
    project = re.search(r'^version = "([^"]+)"', (root / "pyproject.toml").read_text(), re.M)
    newest = re.search(r"^## \[(\d[^\]]*)\]", (root / "CHANGELOG.md").read_text(), re.M)
    assert project.group(1) == minibert.__version__ == newest.group(1)


CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns"}
TIMED_NAME = re.compile(r"second|elapsed|took|wall|duration")


def _wall_time_assertions(source: str) -> list[int]:
    """Lines of the asserts in source that bound a wall time the test measured: `assert X < N`
    (or `N > X`) where X reads a clock (time.perf_counter(), monotonic(), time()), or is a name
    given a clock's reading, or a name like seconds/elapsed/took given what a call returned. A
    bound on a stored result (`seconds = measured[...]`) is a fact about data, not a timing."""
    import ast

    def reads_clock(node: ast.AST, timed: set[str]) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in timed:
                return True
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                owner = sub.func.value
                if sub.func.attr in CLOCKS and isinstance(owner, ast.Name) and owner.id == "time":
                    return True
        return False

    found = []
    for scope in ast.walk(ast.parse(source)):
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        nodes = [n for stmt in scope.body for n in ast.walk(stmt)]
        timed: set[str] = set()
        for _ in range(3):  # a reading passed on: started -> elapsed -> seconds
            for node in nodes:
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = node.targets[0], node.value
                    named = isinstance(target, ast.Name) and TIMED_NAME.search(target.id.lower())
                    if isinstance(target, ast.Name) and (
                        reads_clock(value, timed) or (named and isinstance(value, ast.Call))
                    ):
                        timed.add(target.id)
        for node in nodes:
            if not isinstance(node, ast.Assert):
                continue
            for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
                sides = [compare.left, *compare.comparators]
                for (left, right), op in zip(zip(sides, sides[1:]), compare.ops):
                    if (isinstance(op, (ast.Lt, ast.LtE)) and reads_clock(left, timed)) or (
                        isinstance(op, (ast.Gt, ast.GtE)) and reads_clock(right, timed)
                    ):
                        found.append(node.lineno)
    return sorted(set(found))


def test_no_test_asserts_a_wall_time():
    """A test that bounds its own wall time fails on a slower or busier machine (the site's 'under
    120 s' failed at 134 s on two shared cores): speed is measured in benchmarks/, never asserted."""
    examples = {
        "def t():\n    seconds = build()\n    assert seconds < 120\n": [3],
        "def t():\n    s = time.perf_counter()\n    run()\n    took = time.perf_counter() - s\n"
        "    assert took <= 5\n": [5],
        "def t():\n    start = time.monotonic()\n    assert 2 > time.monotonic() - start\n": [3],
        "def t():\n    seconds = measured['seconds']['a']\n    assert seconds <= 300\n": [],
        "def t():\n    started = time.monotonic()\n    assert started > 0 and len(x) < 3\n": [],
    }
    for source, lines in examples.items():
        assert _wall_time_assertions(source) == lines, source
    found = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line in _wall_time_assertions(path.read_text(encoding="utf-8"))
    }
    assert not found, f"tests that assert a wall time (measure it in benchmarks/): {sorted(found)}"


BAD_TEXTS = ["", "   ", "\t\n", "\x00\x07", "\u200b\u200c\u2060", " \u200b\x01 "]
NOT_TEXT = [123, ["who built it?"], b"who built it?", "ndarray", {"who": 1}]


def _not_text(value):
    import numpy as np

    return np.array(["who built it?"]) if value == "ndarray" else value


def _entry_points():
    """Every Python entry point that takes a text, called with text; each must check it first."""
    from minibert.config import BertConfig
    from minibert.model import BertForMultipleChoice
    from minibert.tokenization import BertTokenizer

    model = BertForMultipleChoice(BertConfig(vocab_size=60, hidden_size=8, num_layers=1,
                                             num_heads=2, intermediate_size=8))  # fmt: skip
    tok = BertTokenizer.from_pretrained(minibert.assets.course_checkpoint("course"))
    return {
        "search": lambda text: minibert.search("no-such-encoder", text),
        "ask": lambda text: minibert.ask(text, reader="no-such-reader"),
        "choose (context)": lambda text: minibert.choose(model, tok, text, ["a .", "b ."]),
        "choose (choice)": lambda text: minibert.choose(model, tok, "it rained .", ["a .", text]),
        "encode": lambda text: minibert.encode("no-such-encoder", [text]),
    }


def test_every_entry_point_refuses_text_with_nothing_to_read_and_non_text_by_its_type(capsys):
    """search answered a query of control or zero-width characters (five hits) where ask and
    choose refused it; mb.search(folder, 123) said "the query is empty (123)"; mb.encode took a
    dict's keys and failed on an array with numpy's truth-value error."""
    from minibert import cli

    for call in _entry_points().values():
        for text in BAD_TEXTS:
            with pytest.raises(ValueError, match=r"is empty \(or only spaces and control"):
                call(text)
        for value in map(_not_text, NOT_TEXT):
            with pytest.raises(TypeError, match=f"must be a str, got {type(value).__name__}"):
                call(value)
    for texts in (_not_text("ndarray"), {"who built it?": 1}, "who built it?"):
        with pytest.raises(
            TypeError, match=f"texts must be a list .*{type(texts).__name__}|one text"
        ):
            minibert.encode("no-such-encoder", texts)
    for command in (["search", "no-such-encoder"], ["ask"]):
        for text in BAD_TEXTS:
            assert cli.main([*command, text]) == 2
            err = capsys.readouterr().err
            assert "is empty (or only spaces and control" in err and err.count("\n") == 1


def test_mb_ask_refuses_what_the_command_refuses_and_mb_choose_says_what_a_model_is():
    for weight in (float("inf"), float("nan"), -1.0):
        with pytest.raises(ValueError, match="retrieval_weight must be a finite number >= 0"):
            minibert.ask("who built it?", reader="no-such-reader", retrieval_weight=weight)
    with pytest.raises(TypeError, match="model must be a multiple-choice model, got NoneType"):
        minibert.choose(None, None, "it rained .", ["a .", "b ."])
