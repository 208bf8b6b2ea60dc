# The two commands: `make test` (every test) and `make demo` (the main job).
# Both install missing Debian packages when run as root, then configure and
# build into build/ with ninja (and ccache when present).

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache keys on relative paths, so every checkout of the tree shares hits.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

DEBIAN_PACKAGES = cmake ninja-build g++ ccache python3 \
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools libzstd-dev zlib1g-dev \
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler \
  flatbuffers-compiler libflatbuffers-dev nlohmann-json3-dev \
  libgtest-dev libcli11-dev

.PHONY: all deps configure build test demo runtime-only device-kit clean format

all: build

deps:
	@.ci/install-deps $(DEBIAN_PACKAGES)

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@examples/demo.sh $(BUILD)

# The runtime, kernels and hybrid-run alone, as on a GPU host without LLVM.
runtime-only: | deps
	cmake -S . -B $(BUILD)-runtime -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DHYBRIDC_ENABLE_COMPILER=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-runtime -j $(JOBS)

# What a GPU host without FlatBuffers (or CLI11) needs to build the
# runtime: carry $(BUILD)/device-kit there and configure with
# -DHYBRIDC_DEVICE_KIT=<it>.
device-kit: configure
	cmake --build $(BUILD) --target hybrid_bundle_schema
	rm -rf $(BUILD)/device-kit && mkdir -p $(BUILD)/device-kit/include
	cp -r /usr/include/flatbuffers /usr/include/CLI $(BUILD)/device-kit/include/
	cp $(BUILD)/runtime/bundle/generated/bundle_generated.h \
	  $(BUILD)/runtime/bundle/generated/ops_generated.h \
	  $(BUILD)/runtime/bundle/generated/ops.fbs runtime/bundle/schema/bundle.fbs \
	  $(BUILD)/device-kit/

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD)-runtime
