# `make course` and `make test` are the two commands a newcomer needs; each installs what it uses first.
PYTHON ?= python3
VENV := .venv
# pip reinstalls only when pyproject.toml is newer than this stamp, so repeated runs start at once.
INSTALLED := $(VENV)/.kstep-installed
EXTRAS := notebook,test,bench
PYTEST := $(VENV)/bin/python -m pytest -ra --durations=15

.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
.PHONY: help setup system-packages course test test-fast notebook bench clean distclean

help:
	@echo "kstep make targets:"
	@echo "  course           install what is needed, build the course into build/course and print the page to open"
	@echo "  test             install what is needed, run every test (slow, qemu and browser ones included)"
	@echo "  test-fast        like test, without the slow, qemu and browser tests"
	@echo "  notebook         start JupyterLab on notebooks/"
	@echo "  bench            run the benchmarks; results in bench/results/ (JSON and a plot)"
	@echo "  setup            Debian packages (scripts/setup-system) and the $(VENV) virtual environment"
	@echo "  system-packages  only the Debian packages"
	@echo "  clean            remove build/ and bench/results/"
	@echo "  distclean        clean, and remove $(VENV)"

setup: system-packages $(INSTALLED)

system-packages:
	@PYTHON=$(PYTHON) scripts/setup-system

$(VENV)/bin/python: | system-packages
	@echo "make: creating $(VENV) with $(PYTHON)"
	@$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }
	@$(VENV)/bin/python -m pip install -q --upgrade pip || { rm -rf $(VENV); exit 1; }

$(INSTALLED): pyproject.toml | $(VENV)/bin/python
	@echo "make: installing kstep with extras [$(EXTRAS)] into $(VENV) (about 650 MB the first time)"
	$(VENV)/bin/python -m pip install -q -e '.[$(EXTRAS)]'
	@touch $@

# build/ is make's own output folder; the course builder never creates a missing parent itself.
course: setup
	@mkdir -p build
	$(VENV)/bin/python -m kstep.views.course --out build/course

test: setup
	$(PYTEST)

test-fast: setup
	$(PYTEST) -m "not slow and not qemu and not browser"

notebook: setup
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks

bench: setup
	$(VENV)/bin/python bench/run.py

clean:
	rm -rf build bench/results

distclean: clean
	rm -rf $(VENV)
