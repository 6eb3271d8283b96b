# The two commands a user needs (see README):
#   make demo   set up, check the proofs, dump the CNN, generate and build its kernels, train
#   make test   set up (with test dependencies), check the proofs, build the dumps, run all tests
PYTHON     ?= python3
AGDA       ?= agda
AGDA_FLAGS := -i /usr/share/agda-stdlib -i .
EPOCHS     ?= 3

.PHONY: all setup setup-test install proofs dump proofs-dump check-forward extract demo experiment zoo test test-fast bench clean

all: demo

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

# a non-editable install that carries the Agda executable and the built-in dumps with it
install: dump
	$(PYTHON) -c "import wheel" 2>/dev/null || $(PYTHON) -c "import setuptools as s, sys; \
	  sys.exit(tuple(int(x) for x in s.__version__.split('.')[:2]) < (70, 1))" \
	  || $(PYTHON) -m pip install -q wheel
	$(PYTHON) -m pip install --no-deps --no-build-isolation .

# one Agda build at a time in a checkout (scripts/build-dump.sh takes the same lock)
AGDA_BUILD ?= build/agda
LOCK := $(shell command -v flock >/dev/null && echo flock $(AGDA_BUILD)/.lock)

proofs:
	@mkdir -p $(AGDA_BUILD)
	$(LOCK) $(AGDA) $(AGDA_FLAGS) Spec/Everything.agda

dump:
	bash scripts/build-dump.sh

# both: the proofs are checked while Agda and GHC compile the executable (scripts/build-dump.sh --proofs)
proofs-dump:
	@mkdir -p $(AGDA_BUILD)
	bash scripts/build-dump.sh --proofs

check-forward:
	bash scripts/build-dump.sh --check-forward

extract: dump
	$(PYTHON) -m extract cnn
	$(PYTHON) -m extract cnn --precision f64

# The paper's own setting (SaC constants, batch 100, lr 0.05) sits on a plateau for its 10
# epochs (see docs/benchmarks.md, "The paper's experiment"); the demo uses a setting that visibly learns.
demo: setup proofs-dump
	$(PYTHON) -m extract cnn
	$(PYTHON) -m runtime train cnn --epochs $(EPOCHS) --init random --lr 1.0 --batch-size 10

# the paper's experiment: 10,000 images, batch 100, lr 0.05, 10 epochs, SaC initial weights
experiment: dump
	$(PYTHON) -m runtime.experiment --torch

# train every model of the zoo (models/*.model) with its documented setting (docs/zoo.md)
zoo: dump
	$(PYTHON) -m runtime train models/mlp.model --epochs 20 --init random --lr 2 --batch-size 10
	$(PYTHON) -m runtime train models/cnn.model --epochs 3 --init random --lr 1.0 --batch-size 10
	$(PYTHON) -m runtime train models/lenet5.model --epochs 30 --init random --lr 0.05 --batch-size 10
	$(PYTHON) -m runtime train models/wide1000.model --epochs 5 --init random --lr 0.05 --batch-size 10
	$(PYTHON) -c "import numpy as np; np.savez('build/gelu.npz', k1=[(2/np.pi)**.5], k2=[0.044715])"
	$(PYTHON) -m runtime train models/encoder.model --epochs 10 --init random --lr 0.1 --batch-size 10 --weights build/gelu.npz
	$(PYTHON) -c "$$MNIST32"
	$(PYTHON) -m runtime train models/resnet20.model --data build/mnist32.npz --epochs 3 --init he --lr 0.02 --momentum 0.9 --batch-size 10

# the bundled MNIST as 3x32x32 images (zero-padded by 2, the plane repeated over 3 channels) for
# models/resnet20.model, a CIFAR-sized network
define MNIST32
import numpy as np, runtime
from runtime.data import load_split
def c(x): return np.repeat(np.pad(x.reshape(-1, 28, 28), ((0, 0), (2, 2), (2, 2)))[:, None], 3, 1).astype(np.float32)
(a, b), (t, u) = (load_split(runtime.DEFAULT_DATA, s) for s in ("train", "test"))
np.savez("build/mnist32.npz", x_train=c(a), y_train=b, x_test=c(t), y_test=u)
endef
export MNIST32

# The tests run in parallel (pytest-xdist, one worker per core: PYTEST_JOBS=1 runs them in this
# process, as does a Python without pytest-xdist) and share one kernel cache (tests/conftest.py);
# the 25 slowest are listed at the end. pytest's exit status is make's: a failure fails, and so
# does exit status 5 (no test ran).
PYTEST_JOBS ?= $(shell $(PYTHON) -c "import xdist" 2>/dev/null && echo auto || echo 1)
PYTEST_ARGS ?= -q -ra --durations=25 $(if $(filter 1,$(PYTEST_JOBS)),,-n $(PYTEST_JOBS) --dist worksteal)

# (PK_PROOFS_CHECKED: `proofs-dump` has just checked every module, tests/test_spec.py need not load
# them again)
test: setup-test proofs-dump
	PK_PROOFS_CHECKED=1 $(PYTHON) -m pytest $(PYTEST_ARGS) || { rc=$$?; [ $$rc -ne 5 ] || \
	  echo "make test: pytest collected no tests (exit status 5)" >&2; exit $$rc; }

# the tests that need neither Agda nor a long run
test-fast:
	$(PYTHON) -m pytest $(PYTEST_ARGS) -m "not agda and not slow" || { rc=$$?; [ $$rc -ne 5 ] || \
	  echo "make test-fast: pytest collected no tests (exit status 5)" >&2; exit $$rc; }

bench: dump
	$(PYTHON) -m bench.run

clean:
	rm -rf build
