# medgate: `make demo` sets up and asks one question on the embedded model; `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.medgate-installed

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

# llama-cpp-python builds from source (about 9 minutes on 2 cores); pip caches the wheel after.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(BIN)/medgate ask "Does aspirin reduce the risk of colorectal adenoma recurrence?" \
		--context-file examples/aspirin_abstract.txt

test: setup
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/mypy

bench: setup
	$(BIN)/python scripts/bench_hrs.py --items 20

clean:
	rm -rf $(VENV) build *.egg-info
