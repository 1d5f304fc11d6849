# ctorch: `make test` and `make demo` do all the set-up on a fresh Debian 12 machine.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_CLANG_ASAN ?= build-asan-clang
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc)
DEPS       := gcc binutils make cmake pkg-config libopenblas-dev zlib1g-dev libzip-dev libdnnl-dev dataset-fashion-mnist doxygen \
              openmpi-bin libopenmpi-dev libprotobuf-c-dev protobuf-c-compiler python3-onnx \
              libpng-dev libprotobuf-dev protobuf-compiler python3-protobuf python3-numpy
DEMO_DEPS  := dataset-fashion-mnist
BENCH_DEPS := python3-torch
# clang 16: the first Debian clang with _Float16 on x86-64; its libFuzzer and OpenMP.
CLANG      := clang-16
CLANG_DEPS := clang-16 libclang-rt-16-dev libomp-16-dev

.PHONY: all deps build test test-sanitize test-sanitize-clang test-tsan test-helgrind fuzz demo demo-amp demo-ddp bench bench-ddp bench-amp docs install clean

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

# The suite under clang's AddressSanitizer and UndefinedBehaviorSanitizer (whose
# "undefined" includes float-cast-overflow, as CTORCH_SANITIZE adds for gcc).
# intercept_tls_get_addr=0: clang 16's LeakSanitizer takes a bogus dynamic-TLS range
# under glibc 2.36 for memory to scan and crashes at exit in some tests ("Tracer caught
# signal 11", google/sanitizers#1322); ctorch's thread-locals are static TLS, still
# scanned.
test-sanitize-clang: deps
	$(call apt_install,$(CLANG_DEPS))
	cmake -S . -B $(BUILD_CLANG_ASAN) -DCMAKE_BUILD_TYPE=Debug -DCTORCH_SANITIZE=ON -DCMAKE_C_COMPILER=$(CLANG)
	cmake --build $(BUILD_CLANG_ASAN) -j $(JOBS)
	cd $(BUILD_CLANG_ASAN) && ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 ctest --output-on-failure -j $(JOBS) -LE 'slow|openblas|isa'

# Each loader's fuzz harness (tests/fuzz/) under libFuzzer with ASan and UBSan for
# FUZZ_SECONDS seconds, starting from the committed corpus; new inputs go to
# $(BUILD_FUZZ)/corpus/<name>, crashes to $(BUILD_FUZZ)/crash-<name>-*.  A crash found
# is added to tests/fuzz/reproducers/<name>/ with its fix, so `make test` replays it.
FUZZERS := safetensors json idx gz mnist checkpoint state_dict csv pt ctm
fuzz: deps
	$(call apt_install,$(CLANG_DEPS))
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$(CLANG) -DCTORCH_LIBFUZZER=ON \
	  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZERS))
	@for f in $(FUZZERS); do \
	  mkdir -p $(BUILD_FUZZ)/corpus/$$f && cp tests/fuzz/corpus/$$f/* $(BUILD_FUZZ)/corpus/$$f/ && \
	  echo "== fuzz_$$f for $(FUZZ_SECONDS) s" && \
	  (cd tests/fuzz && OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 ../../$(BUILD_FUZZ)/tests/fuzz/fuzz_$$f \
	     -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 \
	     -artifact_prefix=../../$(BUILD_FUZZ)/crash-$$f- ../../$(BUILD_FUZZ)/corpus/$$f \
	     > ../../$(BUILD_FUZZ)/fuzz_$$f.log 2>&1) || { tail -60 $(BUILD_FUZZ)/fuzz_$$f.log; exit 1; }; \
	  grep -E "^stat::(number_of_executed_units|new_units_added)" $(BUILD_FUZZ)/fuzz_$$f.log; \
	done

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

# The main job in mixed precision: the same run with bfloat16 autocast (--amp bf16),
# runs/demo-amp-<date>-<time>.
demo-amp: build
	$(call apt_install,$(DEMO_DEPS))
	$(BUILD)/examples/fashion_mnist --amp bf16 --epochs 3 --out runs/demo-amp-$(shell date +%Y%m%d-%H%M%S) --min-accuracy 0.90

# The main job data-parallel: the same CNN on 2 processes of 1 thread each (this
# machine's 2 cores), DDP with a DistributedSampler, batch 32 per process (64 in all),
# 3 epochs (>= 90% test accuracy); rank 0 prints and saves runs/demo-ddp-<date>-<time>.
# mpirun runs as root only with --allow-run-as-root; --oversubscribe allows more
# processes than cores, --bind-to none lets the OS place them, btl self,vader keeps to
# shared memory (no network probing).  Where a container refuses the cross-memory
# attach vader uses for large messages (process_vm_readv: Operation not permitted),
# add --mca btl_vader_single_copy_mechanism none (the MLP's DDP steps
# are then 3 times slower here).  Override MPIRUN_FLAGS at will.
MPIRUN_FLAGS ?= $(if $(filter 0,$(shell id -u)),--allow-run-as-root) --oversubscribe --bind-to none \
	--mca btl self,vader
demo-ddp: build
	$(call apt_install,$(DEMO_DEPS))
	@[ -e $(BUILD)/libctorch_mpi.so ] || { echo "$(BUILD) has no libctorch_mpi.so: configured before MPI was installed? rm -rf $(BUILD) and retry"; exit 1; }
	mpirun $(MPIRUN_FLAGS) -np 2 -x OMP_NUM_THREADS=1 \
	  $(BUILD)/examples/fashion_mnist --ddp --batch-size 32 --epochs 3 --min-accuracy 0.90 \
	  --out runs/demo-ddp-$(shell date +%Y%m%d-%H%M%S)

bench: build
	$(call apt_install,$(BENCH_DEPS))
	bench/run.sh $(BUILD)

# ctorch's DDP against PyTorch's (gloo), 1 process x 2 threads and 2 x 1 (bench/ddp.sh).
bench-ddp: build
	$(call apt_install,$(BENCH_DEPS))
	MPIRUN_FLAGS="$(MPIRUN_FLAGS)" bench/ddp.sh $(BUILD)

# Mixed precision against PyTorch's: the MLP, the demo CNN and an LSTM trained in
# float32 and under bfloat16 autocast, throughput and peak memory (bench/amp.sh).
bench-amp: build
	$(call apt_install,$(BENCH_DEPS))
	bench/amp.sh $(BUILD)

# The API reference, from the headers' comments and the pages of docs/, in
# $(BUILD)/docs/html (under the build directory: generated, never committed, removed
# by make clean).  Fails on any doxygen warning, as the test test_docs_reference does.
docs: deps
	sh tests/docs/check_reference.sh . $(BUILD)/docs

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_CLANG_ASAN) $(BUILD_FUZZ)
