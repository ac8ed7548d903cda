# One place for the project's commands. Every target creates the project-local
# virtual environment (.venv) first, so a fresh clone needs only Python 3.11+, git and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo lint test screenshots bench soak sim clean

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

test: lint
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# the whole suite as 6.10.0, then as 7.4.0 (`make test` runs it as 7.0.0, the version-dependent
# tests on all three); each pass takes as long as `make test`, so CI does not run them
test-versions: $(STAMP)
	SITETK_ONE_VERSIONS=6.10.0 $(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)
	SITETK_ONE_VERSIONS=7.4.0 $(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

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
