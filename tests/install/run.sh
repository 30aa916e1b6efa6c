#!/usr/bin/env bash
# cmake --install of a build, then a separate project (tests/install/consumer) configured against the
# installed prefix alone builds the C++ API example and a snnc::conversion user, and runs them; the
# installed snnc CLI reads the model the example wrote.
#   tests/install/run.sh BUILD_DIR WORK_DIR SOURCE_DIR
set -euo pipefail
build=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/lib/cmake/snnc/snncConfig.cmake" || { echo "no package config installed"; exit 1; }
gen=(); command -v ninja > /dev/null && gen=(-G Ninja)
# A sanitizer build's libraries need the sanitizer runtimes in whatever links them.
if grep -q '^SNN_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
  flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
  gen+=(-DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags")
fi
cmake -S "$src/tests/install/consumer" -B "$work/consumer" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" -DSNNC_EXAMPLE="$src/examples/api_example.cpp" > "$work/configure.log"
cmake --build "$work/consumer" -j2 > "$work/build.log"
"$work/consumer/list_calibrators" | grep -qx ftbc || { echo "snnc::conversion: ftbc not registered"; exit 1; }
if [ -x "$work/consumer/pick_backend" ]; then "$work/consumer/pick_backend"; fi  # snnc::cuda links and runs
if [ -d /usr/share/datasets/fashion-mnist ]; then
  (cd "$work" && consumer/api_example hand_built.snn.h5 4 > api_example.log)
  "$work/prefix/bin/snnc" info "$work/hand_built.snn.h5" | grep -q "neuron" || { echo "installed snnc cannot read it"; exit 1; }
fi
# The Python package, when built: importable from the installed prefix alone, reading the same model.
pydir=$(sed -n 's/^SNN_PYTHON_INSTALL_DIR:STRING=//p' "$build/CMakeCache.txt")
pyexe=$(sed -n 's/^SNN_PYTHON_BINDINGS_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt")
if [ -n "$pyexe" ]; then
  [ -f "$work/prefix/$pydir/snnc/__init__.py" ] || { echo "Python bindings built but not installed in $pydir"; exit 1; }
  (cd "$work" && PYTHONPATH="$work/prefix/$pydir" "$pyexe" -c "
import snnc, sys
assert snnc.__file__.startswith('$work/prefix/'), snnc.__file__
print('snnc', snnc.__version__, 'from', snnc.__file__)
if len(sys.argv) > 1:
    net = snnc.load(sys.argv[1])
    assert net.neuron_layers, 'no neuron layers'
" $( [ -f "$work/hand_built.snn.h5" ] && echo "$work/hand_built.snn.h5" )) || { echo "installed Python package fails"; exit 1; }
fi
echo "install: consumer built and ran against $work/prefix"
