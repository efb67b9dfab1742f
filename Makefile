# Everything a fresh machine needs: `make test`, `make bench`, `make venv`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q

# Chainer 7.8.1's sdist imports pkg_resources: its build needs setuptools<81.
# pip 26 passes only PIP_BUILD_CONSTRAINT to isolated builds; older pip reads
# PIP_CONSTRAINT there and ignores PIP_BUILD_CONSTRAINT.
export PIP_CONSTRAINT := $(CURDIR)/constraints.txt
export PIP_BUILD_CONSTRAINT := $(CURDIR)/constraints.txt

SOURCES := $(shell find chainer_fastpath -name '*.pyx' -o -name '*.pxd' \
                               -o -name '*.h')

.PHONY: venv build lint test bench bench-docs compat clean openmpi test-mpi \
        compat-mpi test-matrix

venv: build

# Dependencies: reinstalled only when the project's metadata changes; the
# editable install compiles nothing (the next rule does, in place). -U:
# the setuptools a new venv bundles on 3.8 and 3.9 (56, 58) cannot read
# [project], and would build the project as a package named UNKNOWN.
$(VENV)/.deps: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -U 'setuptools<70' wheel 'Cython>=3.0'
	CHAINER_FASTPATH_NO_EXTENSIONS=1 $(PIP) install --no-build-isolation \
	    -e '.[test]'
	touch $@

# Extensions: rebuilt in place only when a .pyx/.pxd or setup.py changes.
$(VENV)/.built: $(VENV)/.deps $(SOURCES) setup.py
	$(PY) setup.py -q build_ext --inplace
	touch $@

build: $(VENV)/.built

# MPI=0 skips the Open MPI set-up; the distributed tests then skip.
MPI ?= 1
ifeq ($(MPI),1)
TEST_MPI := openmpi $(VENV)/.mpi4py
TEST_ENV := CHAINER_FASTPATH_REQUIRE_MPI=1
endif

# Python by ruff, Cython by cython-lint (which runs pycodestyle from the venv),
# the layering by tests/test_layers.py (docs/design/layout.md).
CYTHON_SOURCES := $(shell find chainer_fastpath -name '*.pyx' -o -name '*.pxd')
lint: $(VENV)/.deps
	$(PY) -m ruff check chainer_fastpath tests compat_tests setup.py
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/cython-lint $(CYTHON_SOURCES)
	$(PY) tests/test_layers.py

test: lint build $(TEST_MPI)
	$(TEST_ENV) $(PY) -m pytest -q tests

# `make test` on every interpreter of MATRIX found (pythonX.Y on PATH, or
# under pyenv), one after the other, each in its own venv .venv-X.Y (its
# output in .venv-X.Y.log), with MATRIX_MPI as MPI (0: the distributed tests
# skip); then the tiny MLP, stock vs patched, on each (a quick bench row:
# "same result" is their identity). Exits 1 when any of them fails.
MATRIX ?= 3.8 3.9 3.10 3.11 3.12
MATRIX_MPI ?= 0
PYENV_ROOT ?= $(HOME)/.pyenv
MATRIX_BENCH := -m chainer_fastpath bench --quick --only mlp_train

test-matrix:
	@failed=0; \
	for v in $(MATRIX); do \
	  py=; \
	  for c in $$(command -v python$$v) $$(ls -d \
	      $(PYENV_ROOT)/versions/$$v.*/bin/python 2>/dev/null | sort -rV); do \
	    case "$$($$c -c 'import platform; print(platform.python_version())' \
	            2>/dev/null)" in $$v.*) py=$$c; break;; esac; \
	  done; \
	  if [ -z "$$py" ]; then echo "== Python $$v: not found"; continue; fi; \
	  echo "== Python $$v: $$py: make test MPI=$(MATRIX_MPI)" \
	       "(log: .venv-$$v.log)"; \
	  $(MAKE) --no-print-directory test VENV=.venv-$$v PYTHON=$$py \
	      MPI=$(MATRIX_MPI) > .venv-$$v.log 2>&1 || failed=1; \
	  line=$$(grep -E '[0-9]+ (passed|failed|error).* in [0-9.]+s' \
	          .venv-$$v.log | tail -n 1); \
	  count() { n=$$(echo "$$line" | grep -oE "[0-9]+ $$1" | cut -d' ' -f1); \
	            echo "$${n:-0} $$1"; }; \
	  if [ -n "$$line" ]; then \
	    echo "   tests: $$(count passed), $$(count failed)," \
	         "$$(count skipped), $$(count xfailed), $$(count error)"; \
	  else echo "   make test failed before the tests ran: see .venv-$$v.log"; \
	       failed=1; continue; fi; \
	  .venv-$$v/bin/python $(MATRIX_BENCH) > .venv-$$v.bench 2>&1 || failed=1; \
	  sed -n '/^workload /p;/^mlp_train /p' .venv-$$v.bench | \
	      sed 's/^/   /'; \
	done; \
	exit $$failed

# The distributed tests (ChainerMN under mpiexec -n 2) alone.
test-mpi: build openmpi $(VENV)/.mpi4py
	CHAINER_FASTPATH_REQUIRE_MPI=1 $(PY) -m pytest -q tests/mpi

# Open MPI from Debian, only when mpiexec is missing; fails loudly when it
# cannot be installed, so the MPI tests never pass by being skipped.
MPI_PACKAGES := openmpi-bin libopenmpi-dev
APT := env DEBIAN_FRONTEND=noninteractive apt-get -qq
openmpi:
	@command -v mpiexec >/dev/null 2>&1 && exit 0; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "make: mpiexec is missing and there is no apt-get: install" \
	       "Open MPI ($(MPI_PACKAGES)) yourself, or run with MPI=0" >&2; \
	  exit 1; fi; \
	SUDO=; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
	echo "Installing Open MPI from Debian: $(MPI_PACKAGES)"; \
	{ $$SUDO $(APT) update && $$SUDO $(APT) install -y \
	    --no-install-recommends $(MPI_PACKAGES) >/dev/null; } || \
	{ echo "make: apt-get could not install $(MPI_PACKAGES): install" \
	       "Open MPI yourself, or run with MPI=0" >&2; exit 1; }

# mpi4py into the venv, once (a binary wheel where one fits, else built
# against Open MPI's mpicc).
$(VENV)/.mpi4py: $(VENV)/.deps | openmpi
	$(PIP) install 'mpi4py>=3.1,<5'
	touch $@

# The bench extra (PyTorch, matplotlib, scikit-learn, py-spy) for `make bench`:
# `make test`, which CI runs, needs none of it. torch declares setuptools>=77,
# whose distutils lacks the msvccompiler module that Chainer's import of
# numpy.distutils needs, so torch goes in without its declared requirements,
# and those it imports are named here (setuptools it needs only to compile
# extensions of its own).
TORCH_REQUIRES := filelock 'typing-extensions>=4.10.0' 'sympy>=1.13.3' \
                  'networkx>=2.5.1' jinja2 'fsspec>=0.8.5'
$(VENV)/.bench-deps: $(VENV)/.deps pyproject.toml
	$(PIP) install matplotlib scikit-learn py-spy $(TORCH_REQUIRES)
	$(PIP) install --no-deps 'torch==2.13.0'
	touch $@

# BENCH_ARGS: more options of `bench`, e.g. --plot docs/bench.png --json F.
BENCH_ARGS ?=
bench: build $(VENV)/.bench-deps
	$(PY) -m chainer_fastpath bench --quick $(BENCH_ARGS)

# The published run, full rounds: docs/results/bench.json (every
# measurement), docs/results/bench.md (its tables, the summary first),
# docs/bench.png and README.md's summary table.
bench-docs: build $(VENV)/.bench-deps
	$(PY) -m chainer_fastpath bench $(BENCH_ARGS) \
	    --json docs/results/bench.json --markdown docs/results/bench.md \
	    --plot docs/bench.png --readme README.md

# Chainer's upstream suite, stock vs patched: make compat CHAINER_TESTS=/path/to/chainer/tests
compat: build
	$(PY) compat_tests/run.py --chainer-tests $(CHAINER_TESTS) $(ARGS)

# ChainerMN's upstream tests under mpiexec -n 2, stock vs patched.
compat-mpi: build openmpi $(VENV)/.mpi4py
	$(PY) compat_tests/run.py --mpi 2 --chainer-tests $(CHAINER_TESTS) $(ARGS)

# The sanitizer build: the extensions compiled with AddressSanitizer and
# UndefinedBehaviorSanitizer (ASAN_FLAGS, through setup.py's
# CHAINER_FASTPATH_EXTRA_CFLAGS) in a copy of the working tree, build/asan
# (its tracked and untracked, not ignored, files; the in-place build is
# never touched); then the suite and a fuzz campaign of ASAN_FUZZ_PROGRAMS
# programs run there with the venv's python, the sanitizer runtimes
# preloaded (the fuzz worker, a child process, inherits them) and Python's
# objects allocated by malloc, so that the sanitizer sees them too. A memory
# error or undefined behaviour aborts the process it happens in (in a fuzz
# worker: a crash finding, with its program). ASan writes its reports to
# build/asan/report.<pid> (with its warnings about allocations it refused,
# which are no finding); UBSan's runtime (GCC 12) ignores log_path and
# writes to stderr, which pytest leaves uncaptured (--capture=sys) and the
# target copies to build/asan/test-asan.log. The target fails where a step
# fails or a report was written, and prints the reports. Leaks are not
# reported: CPython and NumPy keep memory until exit by design. An
# allocation too large returns NULL (NumPy's MemoryError, which tests of
# huge arguments expect) instead of aborting. The distributed tests skip as
# with MPI=0. ASAN_PYTEST_ARGS: more pytest arguments (paths, -k, -x).
ASAN_DIR := build/asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined
ASAN_FUZZ_PROGRAMS ?= 20000
ASAN_PYTEST_ARGS ?=
ASAN_PY := $(abspath $(PY))
ASAN_REPORT := $(CURDIR)/$(ASAN_DIR)/report
ASAN_ENV = env -u CHAINER_FASTPATH_REQUIRE_MPI \
           LD_PRELOAD="$$(gcc -print-file-name=libasan.so) \
           $$(gcc -print-file-name=libubsan.so)" \
           ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:log_path=$(ASAN_REPORT) \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1 \
           PYTHONMALLOC=malloc PYTHONPATH=$(CURDIR)/$(ASAN_DIR)

# Refreshes the copy: files keep their times (so the build stays
# incremental); files gone from the working tree since the last copy, and
# the .c and .so of a removed .pyx, are deleted from it.
ASAN_COPY = mkdir -p $(ASAN_DIR) && \
	git ls-files -co --exclude-standard -z | xargs -0 -r sh -c \
	    'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done; :' sh | \
	    sort -z > $(ASAN_DIR)/.files.new && \
	touch $(ASAN_DIR)/.files && \
	comm -z -23 $(ASAN_DIR)/.files $(ASAN_DIR)/.files.new | \
	    tr '\0' '\n' | sed -n 's/\.pyx$$//p' | \
	    while read -r m; do rm -f "$(ASAN_DIR)/$$m.c" "$(ASAN_DIR)/$$m".*.so; \
	    done && \
	comm -z -23 $(ASAN_DIR)/.files $(ASAN_DIR)/.files.new | \
	    (cd $(ASAN_DIR) && xargs -0 -r rm -f --) && \
	tar --null -T $(ASAN_DIR)/.files.new -cf - | tar -xf - -C $(ASAN_DIR) && \
	mv $(ASAN_DIR)/.files.new $(ASAN_DIR)/.files

# The flags the copy was built with: a change rebuilds every extension.
$(ASAN_DIR)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(ASAN_FLAGS)' | cmp -s - $@ || echo '$(ASAN_FLAGS)' > $@

# The copy's extensions: rebuilt only when a .pyx/.pxd/.h changes (only the
# modules it touches), and all of them when setup.py or the flags change.
$(ASAN_DIR)/.built: $(VENV)/.deps $(SOURCES) setup.py $(ASAN_DIR)/.flags
	$(ASAN_COPY)
	cd $(ASAN_DIR) && CHAINER_FASTPATH_EXTRA_CFLAGS="$(ASAN_FLAGS)" \
	    $(ASAN_PY) setup.py -q build_ext --inplace \
	    $(if $(filter setup.py $(ASAN_DIR)/.flags,$?),--force)
	touch $@

.PHONY: test-asan FORCE
# The copy is refreshed and built again (incremental, quick when nothing
# changed): a source edited while the first build ran would otherwise come
# with the refreshed copy and run against a stale build.
test-asan: $(ASAN_DIR)/.built
	$(ASAN_COPY)
	cd $(ASAN_DIR) && CHAINER_FASTPATH_EXTRA_CFLAGS="$(ASAN_FLAGS)" \
	    $(ASAN_PY) setup.py -q build_ext --inplace
	rm -f $(ASAN_REPORT).* $(ASAN_DIR)/test-asan.log
	cd $(ASAN_DIR) && $(ASAN_ENV) $(ASAN_PY) -c 'import os, \
	    chainer_fastpath as c, chainer_fastpath._fast_call as f; \
	    d = os.getcwd() + os.sep; \
	    assert c.__file__.startswith(d) and f.__file__.startswith(d), \
	    (c.__file__, f.__file__)'
	cd $(ASAN_DIR) && { status=0; \
	  $(ASAN_ENV) $(ASAN_PY) -m pytest -q -p no:cacheprovider \
	      --capture=sys tests $(ASAN_PYTEST_ARGS) || status=1; \
	  $(ASAN_ENV) $(ASAN_PY) -m chainer_fastpath.testing.fuzz \
	      --programs $(ASAN_FUZZ_PROGRAMS) --skip none || status=1; \
	  echo $$status > .status; } 2>&1 | tee test-asan.log; \
	status=$$(cat .status); \
	reports=$$(grep -l 'ERROR: AddressSanitizer' $(ASAN_REPORT).* \
	           2>/dev/null); \
	if [ -n "$$reports" ]; then cat $$reports; status=1; \
	  echo "test-asan: ASan reports above:" $$reports; fi; \
	if grep -q ': runtime error: ' test-asan.log; then status=1; \
	  echo "test-asan: UBSan reports in $(ASAN_DIR)/test-asan.log:"; \
	  grep ': runtime error: ' test-asan.log; fi; \
	[ $$status = 0 ] && echo "test-asan: passed, no sanitizer report"; \
	exit $$status

# A differential fuzz campaign: generated programs stock vs patched; prints
# programs per second and findings, writes each new finding's reproducer to
# the corpus that `make test` replays. FUZZ_ARGS: --programs N, --seconds S,
# --skip unfixed|none|CATEGORY,..., --seed N (python -m
# chainer_fastpath.testing.fuzz --help).
.PHONY: fuzz
FUZZ_ARGS ?= --seconds 600
fuzz: build
	$(PY) -m chainer_fastpath.testing.fuzz \
	    --corpus tests/testing/fuzz/corpus $(FUZZ_ARGS)

clean:
	rm -rf build $(VENV) *.egg-info
	find chainer_fastpath \( -name '*.so' -o -name '*.c' \) -delete
