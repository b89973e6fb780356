# `make course` and `make test` are the two commands a newcomer needs; each installs what it uses first.
PYTHON ?= python3
VENV := .venv
# uv reinstalls only when pyproject.toml is newer than this stamp, so repeated runs start at once.
INSTALLED := $(VENV)/.kstep-installed
UV := $(VENV)/bin/uv
# Pyodide's core runtime (the npm package, pinned by package-lock.json): the course site serves it
# from its own static folder for the pages' interactive mode.
PYODIDE := node_modules/pyodide/.kstep-installed
EXTRAS := notebook,test,lint,bench,docs
# Bytecode is cached under build/ even where PYTHONDONTWRITEBYTECODE asks for none in the tree: the
# suites start a Python process for each of hundreds of CLI tests, and compiling kstep in every one
# cost an eighth of their CPU time (test_cli_inputs and test_fuzz_cli: 42.4 s; 37.0 s from a cold
# cache).
PYTEST := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/build/pycache $(VENV)/bin/python -m pytest -ra 	--durations=15
# make test's pytest workers: one per core by default (TEST_JOBS=1 runs the suite in one process).
TEST_JOBS ?= $(shell nproc)
# Sphinx reads the course's pages, and MyST-NB executes its notebooks, on this many processes.
COURSE_JOBS ?= $(shell nproc)

.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
.PHONY: help setup system-packages linux-source course lint test test-lab test-site test-fast test-browser-stress test-heavy test-grade-batch notebook lab lab-kernels lab-guest lab-launch-ab lab-fork-ab lab-damon-cpu bench calibrate verdicts clean distclean

help:
	@echo "kstep make targets:"
	@echo "  course           install what is needed, build the course site into build/course and print the page to open"
	@echo "  test             install what is needed, run every test (slow, qemu and browser ones included)"
	@echo "  test-fast        like test, without the slow, qemu and browser tests"
	@echo "  lint             ruff's rules, and long lines and mypy errors no more than scripts/lint-ratchet.json"
	@echo "  test-browser-stress  the player's play/pause browser tests 20 times under 2 busy loops per CPU"
	@echo "                   (not part of test; about half an hour on a loaded 2-CPU machine)"
	@echo "  test-heavy       the footprint and tso-reduction checks over the largest scenarios (make test leaves them out)"
	@echo "  test-grade-batch grade 100 submissions with hostile ones mixed in, a C batch that crashes and floods,"
	@echo "                   and a Gradescope zip in an emulated /autograder (several minutes; make test leaves these out)"
	@echo "  notebook         start JupyterLab on notebooks/"
	@echo "  lab              build the kernel lab's C ports for x86_64, arm64 and ppc64le (kernel-lab/build/)"
	@echo "  linux-source     fetch Debian's linux-source-6.12 and unpack it into the user cache (once; the"
	@echo "                   kernel lab and the tests that compare with the kernel read it there)"
	@echo "  lab-kernels      fetch Debian's Linux 6.12 kernels for the real-kernel lab (kstep lab fetch; once)"
	@echo "  lab-launch-ab    [BASE=vmlinuz-6.1] [BOOTS=5] [ARCH=x86_64|arm64]: launchbench on 6.1 against 6.12 in QEMU, 95% intervals"
	@echo "  lab-fork-ab      [BASE=vmlinuz-6.1] [BOOTS=3] [ARCH=x86_64|arm64]: forkbench 4k and 2m-pte on 6.1 against 6.12"
	@echo "  lab-damon-cpu    [BOOTS=3] [ARCH=x86_64]: kdamond's CPU time in QEMU for 8, 64 and 512 MiB targets"
	@echo "  lab-guest        boot each architecture's real kernel in QEMU with every probe (kstep lab run --arch all),"
	@echo "                   then once more with 4 CPUs for the qspinlock with three lockers"
	@echo "  bench            run the benchmarks; results in bench/results/ (JSON and a plot); BENCH='litmus explore' runs those only"
	@echo "  calibrate        measure this machine's costs (cache-line transfer, atomic, page clear/copy,"
	@echo "                   mprotect, page fault) into build/costs.json, for kstep run --timed --costs"
	@echo "  verdicts         explore every bundled scenario x variant into simulator/kstep/verdicts.json,"
	@echo "                   and record the site's counterexamples in simulator/kstep/counterexamples.json"
	@echo "  setup            Debian packages (scripts/setup-system), the $(VENV) virtual environment and"
	@echo "                   Pyodide's runtime in node_modules/ (for the pages' interactive mode)"
	@echo "  system-packages  only the Debian packages"
	@echo "  clean            remove build/, bench/results/, docs/animations/ (generated) and kernel-lab/build/"
	@echo "  distclean        clean, and remove $(VENV)"

setup: system-packages $(INSTALLED) $(PYODIDE)

system-packages:
	@PYTHON=$(PYTHON) scripts/setup-system

$(VENV)/bin/python: | system-packages
	@echo "make: creating $(VENV) with $(PYTHON)"
	@$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

# uv (a wheel from the package index, installed by the venv's own pip) installs kstep's requirements:
# it downloads them in parallel and installs without pip's per-package work, about 25 s on a fresh
# machine where pip took over 6 minutes (issue 21).  A venv made before uv was used gets it here too.
$(UV): | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q 'uv>=0.13,<0.14'

# --link-mode=copy: the venv never shares files with uv's cache, which may sit on another file system.
$(INSTALLED): pyproject.toml | $(UV)
	@echo "make: installing kstep with extras [$(EXTRAS)] into $(VENV) (about 650 MB the first time)"
	$(UV) pip install -q --link-mode=copy --python $(VENV)/bin/python -e '.[$(EXTRAS)]'
	@touch $@

$(PYODIDE): package.json package-lock.json | system-packages
	@echo "make: installing Pyodide's runtime (npm ci: the versions package-lock.json pins) into node_modules/"
	npm ci --no-audit --no-fund
	@touch $@

# build/ is make's own output folder; the course builder never creates a missing parent itself.
# The site goes to build/course, its caches (doctrees, executed notebooks) to build/course-cache.
# The litmus pages run the LKMM from the kernel's own tools/memory-model/ files: the tree comes first.
course: setup linux-source
	@mkdir -p build
	$(VENV)/bin/python -m kstep.views.course --docs docs --out build/course --jobs $(COURSE_JOBS)

# Grading at class scale (a batch of 100, a Gradescope zip installed from scratch) takes minutes:
# it has a target of its own.
# The qemu tests boot Debian's kernels: fetch them first (a no-op once they are in the cache).
# The kernel lab's ports are built once before the workers start, so no two of them run make at once;
# so is the course site, on every core.  The two builds run side by side (test-lab, test-site): neither
# reads what the other writes, and each fills the cores the other leaves idle (the site's notebooks, 114 s
# of kernel CPU, are spread over its reading processes: kstep.views.site.spread_notebooks).  Their lines
# mix, so that both show progress; each compiler run's output stays together (the lab's --output-sync).
# Which files each worker ran, and how long one waited for the other: scripts/test-timeline.
test: setup lab-kernels linux-source
	$(MAKE) -j --no-print-directory test-lab test-site
	$(PYTEST) -n $(TEST_JOBS) --testrunuid "$$(cat build/course.built-for)" --dist loadfile --no-loadscope-reorder \
		-m "not batch and not heavy"

# The fast suite on every core too (whole files per worker, in conftest.py's order): CI's unit
# failures show in minutes.
test-fast: setup linux-source
	$(PYTEST) -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder \
		-m "not slow and not qemu and not browser and not batch and not heavy"

lint: setup
	$(VENV)/bin/python scripts/lint

# The whole-state-space checks over the largest scenarios (tens of minutes on 2 cores).
test-heavy: setup
	$(PYTEST) -n $(TEST_JOBS) --dist loadfile -m heavy

test-grade-batch: setup lab
	$(PYTEST) -m batch

# Flaky browser tests show up under load: 20 runs with two busy loops per CPU, pass only if all pass.
# It repeats the four tests that click the controls while the player's timer runs (where Pause once
# met a re-created button); the slider, jump and counterexample tests never race a timer, and the
# whole set takes twice as long a run.  scripts/browser-stress alone runs every browser test.
test-browser-stress: setup
	$(VENV)/bin/python scripts/browser-stress --runs 20 --load 2 -- -k "plays_pauses or play_pause_button"

notebook: setup
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks

# The C ports compile the kernel's own files from the linux-source tree; make -C kernel-lab test runs
# the lab's checks alone.  Its 160-odd compiler runs are mostly independent: one per core at a time
# (LAB_JOBS=1: one at a time), each one's output kept together.
LAB_JOBS ?= $(shell nproc)
LAB_BUILD = $(MAKE) -C kernel-lab -j$(LAB_JOBS) --output-sync=target
lab: linux-source
	$(LAB_BUILD)

# make test's builds before its workers start (its prerequisites first: run them through make test).
# The run's id goes beside the site (build/course.built-for) and to the workers (--testrunuid):
# conftest.py's site fixture then takes this build as the run's own instead of building it again.
test-lab:
	$(LAB_BUILD)

test-site:
	@mkdir -p build
	$(VENV)/bin/python -m kstep.views.course --docs docs --out build/course --jobs $(TEST_JOBS)
	@$(VENV)/bin/python -c 'import uuid; print(uuid.uuid4().hex, end="")' > build/course.built-for

# The pinned release, or the newest 6.12.y when Debian no longer has it (the checks that need the
# pinned release exactly then fail on one named reason, "stale pin").
linux-source: setup
	$(VENV)/bin/python -m kstep.source.index tree >/dev/null

lab-kernels: setup
	$(VENV)/bin/python -m kstep lab fetch

lab-guest: lab-kernels
	$(VENV)/bin/python -m kstep lab run --arch all
	$(VENV)/bin/python -m kstep lab run --arch all --smp 4 qspin

# Per-VMA locks, Linux 6.1 against 6.12: BOOTS boots of each with the launch probe, alternating,
# into bench/results/launch-ab.json.  The 6.1 kernel is bookworm's newest, fetched the first time
# (kstep.lab.guest.base_kernel), unless BASE names a vmlinuz; make bench runs it too (launch-ab).
ARCH ?= x86_64
lab-launch-ab: lab-kernels
	nice $(VENV)/bin/python bench/launch_ab.py $(if $(BASE),--base-kernel "$(BASE)") --boots $(or $(BOOTS),5) --arch $(ARCH)

# Fork batching, 6.1 (PTE by PTE) against 6.12 (folio_pte_batch): BOOTS boots of each with the fork
# probe, alternating, into bench/results/fork-ab.json (bench/fork_ab.py; make bench runs it: fork-ab).
lab-fork-ab: lab-kernels
	nice $(VENV)/bin/python bench/fork_ab.py $(if $(BASE),--base-kernel "$(BASE)") --boots $(or $(BOOTS),3) --arch $(ARCH)

# kdamond's CPU time against its target's size: BOOTS boots (3 unless given) with the damoncpu probe
# into bench/results/damon-cpu.json; make bench runs it too (damon-cpu).
lab-damon-cpu: lab-kernels
	nice $(VENV)/bin/python bench/damon_cpu.py --boots $(if $(filter command line,$(origin BOOTS)),$(BOOTS),3) \
		--arch $(or $(ARCH),x86_64)

bench: setup lab-kernels
	$(VENV)/bin/python bench/run.py $(BENCH)

# This machine's cost table for the timed scheduler, pinned to CPUs 0 and 1 (CALIBRATE_CPUS to change);
# it stays in build/: the committed table (simulator/kstep/costs.json) is the one chapters and tests use.
CALIBRATE_CPUS ?= 0 1
calibrate: system-packages
	@mkdir -p build
	gcc -std=gnu11 -O2 -Wall -Wextra -pthread -o build/calibrate-costs kernel-lab/calibrate/costs.c
	build/calibrate-costs $(CALIBRATE_CPUS) "$$(uname -n), $$(nproc) CPUs, $$(uname -m) natively, Linux $$(uname -r)" > build/costs.json.tmp
	mv build/costs.json.tmp build/costs.json
	@echo "make: wrote build/costs.json; use it with kstep run MECH --scenario S --timed --costs build/costs.json"

# The committed verdict table: its diff shows what a change did to every explore verdict.
verdicts: setup
	$(VENV)/bin/python scripts/verdicts

clean:
	rm -rf build bench/results docs/animations
	$(MAKE) -C kernel-lab clean

distclean: clean
	rm -rf $(VENV) node_modules
