# Entry points for people and CI. Everything goes through CMake in an out-of-source build/.
#   make demo   install what is missing, build, run the flagship example
#   make test   install what is missing, build, run every test
BUILD_DIR  ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

# CI (CI=true) also treats warnings in Orch's own code as errors.
ifeq ($(CI),true)
  CMAKE_ARGS += -DORCH_WERROR=ON
endif

.PHONY: all deps configure build test demo bench clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

demo: build
	@echo "no demo yet: the flagship example runs once the runtime and stdlib land (issues 5-7)."
	@echo "The compiler checks it today:"
	$(BUILD_DIR)/bin/orchc --check examples/pdf_to_markdown.orch && echo "examples/pdf_to_markdown.orch: ok"

bench: build
	$(BUILD_DIR)/bin/orch_bench

clean:
	rm -rf $(BUILD_DIR)
