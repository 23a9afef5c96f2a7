# Thin wrapper over CMake. `make` builds build/dsv4, `make test` runs every test.
BUILD ?= build
JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps configure test clean format asan serve

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

# Serve the embedded model (models/tiny) on 127.0.0.1:30000; SERVE_ARGS adds options (e.g. --port 8000).
SERVE_ARGS ?=
serve: $(BUILD)/dsv4
	$(BUILD)/dsv4 serve -m models/tiny $(SERVE_ARGS)

asan:
	$(MAKE) BUILD=build-asan CMAKE_FLAGS="-DDSV4_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" test

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD) build-asan

FORCE:
