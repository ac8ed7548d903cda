# One place for the project's commands. Every target creates the project-local
# virtual environment (.venv) first, so a fresh clone needs only Python 3.11+, git and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Python writes and reuses its bytecode caches (__pycache__, ignored by git) whatever the calling
# environment says: with PYTHONDONTWRITEBYTECODE set, every pytest worker compiled and rewrote every
# test module again (collection 23 CPU-s instead of 8) and every `sitetk` the tests start compiled
# the modules it imports (0.1-0.25 CPU-s each)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo lint test screenshots bench soak sim record clean real-site real-site-stop real-site-status test-real

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/sitetk --demo

sim: $(STAMP)
	$(BIN)/sitetk sim

# static checks (configured in pyproject.toml): pyflakes and import order, types, layering
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The suite runs in parallel (pytest-xdist): most tests wait on the embedded site rather than
# compute, so more workers than cores pay off (8 on 2 cores: pytest 4 min 48 s, against 5 min 56 s
# with 6 and 7 min 32 s with 4, session 14 on one machine); PYTEST_WORKERS=0 runs it in
# one process. One run covers the three platform versions: a test that starts an embedded site as
# the version under test runs at every version (6.10.0, 7.0.0, 7.4.0, the version in its id) when
# its behaviour depends on the version, else once at a version chosen from its id; every other test
# once (tests/conftest.py); PYTEST_ARGS="--one-versions 7.4.0" narrows it, "--every-version" runs
# every one at every version.
# Tests go to the workers one at a time (--maxschedchunk 1), the ones marked `slow` first
# (tests/conftest.py), so that no worker ends the run alone on long tests collected together.
PYTEST_WORKERS ?= 8
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --maxschedchunk 1

test: lint
	$(PYTEST) --ignore=tests/real $(PYTEST_ARGS)

# A real OpenNebula frontend on loopback from an installed prefix (README: The real platform; the
# build itself is not in this repository): make real-site ONE_PREFIX=/path/to/prefix [REAL_STATE=dir]
REAL_STATE ?= .realsite/state
real-site: $(STAMP)
	@test -n "$(ONE_PREFIX)" || { echo "usage: make real-site ONE_PREFIX=<install prefix> [REAL_STATE=<dir>]"; exit 2; }
	$(BIN)/python -m realsite start --prefix "$(ONE_PREFIX)" --state "$(REAL_STATE)"

real-site-stop: $(STAMP)
	$(BIN)/python -m realsite stop --state "$(REAL_STATE)"

real-site-status: $(STAMP)
	$(BIN)/python -m realsite status --state "$(REAL_STATE)"

# the end-to-end suite against a running real frontend: make test-real REAL_ENV=<state dir>/env
# (default: the env file of REAL_STATE)
REAL_TEST_ENV = $(or $(REAL_ENV),$(REAL_STATE)/env)
test-real: $(STAMP)
	@test -f "$(REAL_TEST_ENV)" || { echo "no $(REAL_TEST_ENV): start a frontend with make real-site, or give REAL_ENV=<state dir>/env"; exit 2; }
	SITETK_REAL_ENV="$(abspath $(REAL_TEST_ENV))" $(BIN)/python -m pytest -q -p no:cacheprovider -n 0 tests/real --durations=0 $(PYTEST_ARGS)

# Record the scenario of tests/recordings against a frontend (README: Recordings of the real platform):
# make record REAL_ENV=<state dir>/env writes tests/recordings/<version>.json
record: $(STAMP)
	@test -n "$(REAL_ENV)" || { echo "usage: make record REAL_ENV=<state dir>/env (ONE_XMLRPC, ONE_AUTH, ONEFLOW_URL)" >&2; exit 2; }
	$(BIN)/python -m tests.recordings.record --env $(REAL_ENV) $(RECORD_ARGS)

screenshots: $(STAMP)
	$(BIN)/python -m tui.screenshots

bench: $(STAMP)
	$(BIN)/python -m bench

# randomised sitetk commands under faults, signals and concurrency (README: Under faults, signals
# and concurrency); SOAK_ARGS="--ops 40 --seed 7" for a short one
SOAK_ARGS ?= --ops 500 --seed 1 --json bench/results/soak.json
soak: $(STAMP)
	mkdir -p bench/results
	$(BIN)/python -m bench.soak $(SOAK_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
