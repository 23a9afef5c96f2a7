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
# Until models/tiny exists, the synthetic test model (random weights, test tokenizer) stands in.
SERVE_ARGS ?=
serve: $(BUILD)/dsv4
	@if [ -f models/tiny/config.json ]; then m=models/tiny; else \
	  m=$$(DSV4=$(BUILD)/dsv4 DSV4_BUILD=$(BUILD) sh tests/server/make_model.sh) && \
	  echo "make serve: models/tiny is not there yet; serving the synthetic test model $$m (random weights)" >&2; \
	fi; exec $(BUILD)/dsv4 serve -m $$m $(SERVE_ARGS)

asan:
	$(MAKE) BUILD=build-asan CMAKE_FLAGS="-DDSV4_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" test

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD) build-asan

FORCE:
