# minibert: set up, open the course, run the tests. Needs Python >= 3.10 and access to PyPI.
#   make lab     virtual environment + install + assets, then JupyterLab on notebooks/
#   make test    virtual environment + install (with test tools) + assets, then unit tests + nbval
#                (make test KERNEL=other: the notebooks as another CPU computes them; run it before
#                committing outputs; CI does on an AVX-512 machine, see .ci/run)
#   make student-edition   the notebooks without the exercises' solutions, in student_edition/
#   make site    the course as a static website in _site/ (works offline; see README)
#   make slides  one reveal.js deck per lesson in _slides/ (works offline; RISE shows them in the lab)
#   make sandbox bubblewrap, the assignment grader's sandbox (installed by apt-get as root)
#   make compat  the set-up and the tests on every Python 3.10-3.13 found (benchmarks/compat.py)
# Override on the command line, e.g. `make test PYTHON=python3.12` or `make lab TORCH=torch`.

PYTHON ?= python3
VENV ?= .venv
# torch is installed first and only when the environment has none. On this course's reference
# machine `torch==2.13.0` is the CPU build; on a Linux laptop without a GPU you can save gigabytes
# with: make lab TORCH_INDEX="--index-url https://download.pytorch.org/whl/cpu"
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
D2L ?= 1.0.3
PY := $(VENV)/bin/python
# JupyterLab refuses to start as root (as in many containers) unless told it may
LAB_ARGS ?= $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root,)
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
# KERNEL=other runs the notebooks as another CPU computes them (tests/other_cpu.py: ATen's and
# MKL's AVX2 code on an AVX-512 machine, their scalar/AVX code elsewhere), so that outputs stored
# on one CPU are checked as a student's laptop computes them (CI does where that path is
# vectorised: .ci/run says why). The unit tests run on the native path: on an AVX2 machine the
# scalar path made them three times slower and checks nothing stored.
KERNEL ?= native
# JOBS: how many test processes run at once (pytest-xdist), each with one thread, so that two never
# fight for a core. On a 2-core machine two took CI's unit tests from 784 s to 418 s and nbval from
# 995 s to 638 s (each notebook stays whole in one process, its cells in order); JOBS=1: one process.
JOBS ?= 2
PARALLEL = $(if $(filter 1,$(JOBS)),,OMP_NUM_THREADS=1)
SPREAD = $(if $(filter 1,$(JOBS)),,-n $(JOBS) --dist $(1))
RUN_AS := $(if $(filter other,$(KERNEL)),env $$($(PY) tests/other_cpu.py),)

.PHONY: lab test unit nbval notebooks assets lint format clean student-edition site slides sandbox compat

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.course: pyproject.toml | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install $(TORCH) $(TORCH_INDEX)
	$(PY) -m pip install -e ".[course]"
	# d2l for notebook 11, without its pins (numpy 1.23.5, matplotlib 3.7.2, ...), which would
	# break this environment: pip cannot say --no-deps for one requirement of an extra
	$(PY) -m pip install --no-deps "d2l==$(D2L)"
	touch $@

$(VENV)/.dev: pyproject.toml $(VENV)/.course
	$(PY) -m pip install -e ".[course,dev]"
	touch $@

assets: $(VENV)/.course
	$(PY) -m minibert fetch all

# the assignment grader's sandbox: Debian's bubblewrap, installed when bwrap is missing and we may
# (root, apt-get); otherwise a note on how to get it. Nothing to do when bwrap is there already.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap (the assignment grader's sandbox) with apt-get"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null 2>&1; } || \
	    echo "note: apt-get could not install bubblewrap; the grader's tests that need it are skipped"; \
	  else \
	    echo "note: bwrap not found: the assignment grader runs submissions without a sandbox and" \
	      "its sandbox tests are skipped; install bubblewrap (sudo apt-get install bubblewrap)"; \
	  fi; }

# every Python 3.10-3.13 found here, each in its own environment under build/compat/: the set-up
# and `make test` as a student runs them; writes benchmarks/results/compat.json (hours)
compat:
	$(PYTHON) benchmarks/compat.py

lab: assets
	$(PY) -m jupyter lab --notebook-dir=notebooks $(LAB_ARGS)

test: $(VENV)/.dev assets sandbox
	$(PARALLEL) $(PY) -m pytest tests $(call SPREAD,loadscope) --durations=15; unit=$$?; \
	$(PARALLEL) $(RUN_AS) $(PY) -m pytest notebooks $(NBVAL) $(call SPREAD,loadfile) --durations=10; nb=$$?; \
	exit $$(( unit || nb ))

unit: $(VENV)/.dev assets sandbox
	$(PARALLEL) $(PY) -m pytest tests $(call SPREAD,loadscope)

nbval: $(VENV)/.dev assets
	$(PARALLEL) $(RUN_AS) $(PY) -m pytest notebooks $(NBVAL) $(call SPREAD,loadfile)

# re-execute every notebook in place, top to bottom, each in a fresh kernel
notebooks: $(VENV)/.dev assets
	for nb in notebooks/*.ipynb; do \
	  $(PY) -m jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=900 "$$nb" || exit 1; \
	done

# the notebooks without the exercises' solutions, in student_edition/ (made by nbgrader)
student-edition: $(VENV)/.course
	$(PY) -c "import nbgrader" 2>/dev/null || $(PY) -m pip install -e ".[course,teach]"
	$(PY) -m minibert course student-edition student_edition --overwrite

# the course as a static website in _site/ (student edition, guide, data, API reference); it
# works from disk with no network: open _site/index.html, or publish the folder as it is
site: $(VENV)/.course
	$(PY) -c "import myst_nb, nbgrader, jupyter_server_mathjax" 2>/dev/null || $(PY) -m pip install -e ".[course,site]"
	$(PY) docs/site/build.py _site

# one reveal.js deck per lesson in _slides/, from its student edition and stored outputs (cells'
# slide types: minibert/teaching/slides.py); opens from disk: open _slides/index.html
slides: $(VENV)/.course
	$(PY) -c "import nbgrader, jupyter_server_mathjax, sphinx_revealjs" 2>/dev/null || $(PY) -m pip install -e ".[course,site]"
	$(PY) -m minibert course slides _slides

lint: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(VENV)/.dev
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis _site _slides build/site-src build/site-doctrees
