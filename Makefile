# The two commands a user needs (see README):
#   make demo   set up, check the proofs, dump the CNN, generate and build its kernels, train
#   make test   set up (with test dependencies), check the proofs, build the dumps, run all tests
PYTHON     ?= python3
AGDA       ?= agda
AGDA_FLAGS := -i /usr/share/agda-stdlib -i .
EPOCHS     ?= 3

.PHONY: all setup setup-test proofs dump extract demo test test-fast bench clean

all: demo

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

proofs:
	$(AGDA) $(AGDA_FLAGS) Spec/Everything.agda

dump:
	bash scripts/build-dump.sh

extract: dump
	$(PYTHON) -m extract cnn

demo: setup proofs dump
	$(PYTHON) -m extract cnn
	$(PYTHON) -m runtime train cnn --epochs $(EPOCHS)

test: setup-test proofs dump
	$(PYTHON) -m pytest -q -ra

# the tests that need neither Agda nor a long run
test-fast:
	$(PYTHON) -m pytest -q -ra -m "not agda and not slow"

bench:
	$(PYTHON) bench/run.py

clean:
	rm -rf build
