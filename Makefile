# Entry points for people and CI. Everything goes through CMake in an out-of-source build/.
#   make demo   install what is missing, build, run the flagship example
#   make test   install what is missing, build, run every test
#   make vsix   package the VS Code extension (editors/vscode) as build/orch-VERSION.vsix
BUILD_DIR  ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

# CI (CI=true) also treats warnings in Orch's own code as errors.
ifeq ($(CI),true)
  CMAKE_ARGS += -DORCH_WERROR=ON
endif

FUZZ_DIR     ?= build-fuzz
FUZZ_SECONDS ?= 60

.PHONY: all deps configure build test demo bench bench-real device-check fuzz fuzz-runtime vsix clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# The flagship example on the bundled PDFs (one of them corrupt on purpose: it is reported in
# the errors journal, and orch's exit status 2 "some rows failed" is the expected outcome).
DEMO_DIR := $(BUILD_DIR)/demo
demo: build
	@rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)
	@cd $(DEMO_DIR) && status=0 && \
	  $(CURDIR)/$(BUILD_DIR)/bin/orch run $(CURDIR)/examples/pdf_to_markdown.orch \
	    --set 'input=$(CURDIR)/examples/samples/pdfs/*.pdf' --metrics metrics.json || status=$$?; \
	  test $$status -le 2
	@echo "demo: one Markdown file per PDF in $(DEMO_DIR)/out/, one JSON line per PDF in $(DEMO_DIR)/out/docs.jsonl"
	@echo "demo: failed PDFs and their causes in $(DEMO_DIR)/pdf_to_markdown.errors.jsonl:"
	@cat $(DEMO_DIR)/pdf_to_markdown.errors.jsonl
	@$(BUILD_DIR)/bin/orch report $(DEMO_DIR)/metrics.json -o $(DEMO_DIR)/report.html

# Microbenchmarks, then the paper's experiments in simulation (BENCH_ARGS=--quick: 1/8 scale).
bench: build
	bench/run.sh $(BENCH_ARGS)

# Real operators on real data (PDF text, OCR, video frames) against pdftotext, tesseract and
# ffmpeg command lines; downloads Debian's texlive-pictures-doc once (233 MB, cached).
bench-real: build
	bench/real/run.sh

# The GPU checks as one folder and archive for a machine with only an NVIDIA driver
# (docs/building.md, "The device check"): needs nvcc.
device-check: deps
	BUILD_DIR=$(BUILD_DIR) bench/gpu/bundle.sh

# Fuzzes the compiler with libFuzzer for FUZZ_SECONDS, starting from every .orch file in the
# repository; new inputs that find new coverage collect in $(FUZZ_DIR)/corpus, and an input
# that fails is saved as $(FUZZ_DIR)/crash-*.
fuzz:
	@scripts/install-deps.sh fuzz
	CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DORCH_FUZZ=ON -DORCH_CUDA=OFF
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target orch_compiler_fuzzer
	mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/seeds
	find examples tests -name '*.orch' -exec cp {} $(FUZZ_DIR)/seeds/ \;
	$(FUZZ_DIR)/bin/orch_compiler_fuzzer -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  -timeout=10 -rss_limit_mb=4096 -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus $(FUZZ_DIR)/seeds

# The runtime's differential tester for longer than `make test` runs it (60 s): random programs
# through `orch run` under random executors, policies and SIGKILLs with resumes, against the
# reference interpreter, some trials edited between a kill and its resume, some ending with
# --retry-failed. RUNTIME_FUZZ_SECONDS (default 600).
RUNTIME_FUZZ_SECONDS ?= 600
fuzz-runtime: build
	ORCH_DIFFERENTIAL_SECONDS=$(RUNTIME_FUZZ_SECONDS) \
	  $(BUILD_DIR)/bin/orch_unit_tests --gtest_filter='RuntimeDifferentialTest.*'

# The VS Code extension, packaged with @vscode/vsce (installed from npm at the locked version).
VSIX_VERSION = $(shell sed -n 's/^  "version": "\(.*\)",/\1/p' editors/vscode/package.json)
vsix: deps
	@editors/vscode/scripts/npm-install.sh
	@mkdir -p $(BUILD_DIR)
	cd editors/vscode && npx vsce package --skip-license -o $(CURDIR)/$(BUILD_DIR)/orch-$(VSIX_VERSION).vsix
	@echo "vsix: install with: code --install-extension $(BUILD_DIR)/orch-$(VSIX_VERSION).vsix"

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR)
