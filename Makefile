# Thin wrapper over CMake. `make` builds build/dsv4, `make test` runs every test.
BUILD ?= build
JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps configure test clean format asan

all: $(BUILD)/dsv4

deps:
	@scripts/deps.sh

$(BUILD)/Makefile: CMakeLists.txt tests/CMakeLists.txt | deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

$(BUILD)/dsv4: $(BUILD)/Makefile FORCE
	cmake --build $(BUILD) -j $(JOBS)

test: $(BUILD)/dsv4
	@scripts/deps.sh --test
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan:
	$(MAKE) BUILD=build-asan CMAKE_FLAGS="-DDSV4_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" test

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD) build-asan

FORCE:
