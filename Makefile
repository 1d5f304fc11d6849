# ctorch: `make test` and `make demo` do all the set-up on a fresh Debian 12 machine.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
JOBS       ?= $(shell nproc)
DEPS       := gcc binutils make cmake pkg-config libopenblas-dev zlib1g-dev dataset-fashion-mnist doxygen
DEMO_DEPS  := dataset-fashion-mnist
BENCH_DEPS := python3-torch

.PHONY: all deps build test test-sanitize test-tsan test-helgrind demo bench docs install clean

all: build

# Installs what is missing (as root, through apt-get); otherwise says what to install.
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "please install:$$missing (sudo apt-get install$$missing)"; exit 1; fi; \
	fi
endef

deps:
	$(call apt_install,$(DEPS))

$(BUILD)/Makefile: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-sanitize: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DCTORCH_SANITIZE=ON
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE 'slow|openblas|isa'

# The threads test under ThreadSanitizer.  libgomp is not instrumented, so OpenMP runs
# one thread (the test also calls ct_set_num_threads(1)).
test-tsan: deps
	cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=Debug -DCTORCH_TSAN=ON
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target test_autograd_threads
	cd tests && OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ../$(BUILD_TSAN)/tests/test_autograd_threads

# The same test under valgrind's helgrind (uninstrumented Release build).
test-helgrind: build
	cd tests && OMP_NUM_THREADS=1 valgrind --tool=helgrind --error-exitcode=1 \
	  ../$(BUILD)/tests/test_autograd_threads

# The main job: a CNN trained on Fashion-MNIST for 3 epochs (>= 90% test accuracy),
# checkpoints and config in a new runs/demo-<date>-<time>.
demo: build
	$(call apt_install,$(DEMO_DEPS))
	$(BUILD)/examples/autograd_basics
	$(BUILD)/examples/fashion_mnist --epochs 3 --out runs/demo-$(shell date +%Y%m%d-%H%M%S) --min-accuracy 0.90

bench: build
	$(call apt_install,$(BENCH_DEPS))
	bench/run.sh $(BUILD)

# The API reference, from the headers' comments and the pages of docs/, in
# $(BUILD)/docs/html (under the build directory: generated, never committed, removed
# by make clean).  Fails on any doxygen warning, as the test test_docs_reference does.
docs: deps
	sh tests/docs/check_reference.sh . $(BUILD)/docs

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN)
