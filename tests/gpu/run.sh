#!/usr/bin/env bash
# tests/gpu/run.sh: the GPU checks of snnc in one script (build with CUDA, CPU-vs-CUDA agreement tests,
# kernel and network benchmarks), for a lent GPU machine that has nvcc, CMake, ninja and a python3 with
# PyTorch and the pip CUDA libraries, but none of this project's Debian packages.
#
#   tests/gpu/run.sh --prepare      here (Debian 12, root): gather everything the GPU machine lacks into
#                                   the ignored folder .gpu-carry/ (< 40 MB) and print the `run` call
#   tests/gpu/run.sh                there, from the repo root: configure, build, test, benchmark; results
#                                   in $OUT (default ./gpu-results), at most 8 files; exit 0 = all passed
#   tests/gpu/run.sh --dry-run      here or in CI (no GPU): the same configure + build with the system
#                                   packages into build-gpu-dry/, `bash -n` of the scripts, the
#                                   CudaLibraries.cmake check, and the GPU tests must skip cleanly (77)
#   tests/gpu/run.sh --check-carry  here: build a tiny CMake project, and configure the real one, against
#                                   .gpu-carry/ alone (system dev files hidden in a mount namespace
#                                   when run as root)
#   tests/gpu/run.sh --simulate     here, as root: GPU mode with the system dev files hidden (a full build
#                                   against the carry; without a GPU its tests and benches then fail)
#
# Environment: OUT (results folder), SNNC (snnc with the TorchScript importer, for --prepare),
# JOBS (build parallelism; default all cores), SNN_GPU_BUDGET_S (GPU mode: seconds for the whole run,
# default 450), SNN_GPU_BUILD_S (GPU mode: at most this for the build, default 300), CUDA_ARCH
# (default: from nvidia-smi, else 90), PYTHON (default python3), SNN_GPU_DEB_CACHE (--prepare's .deb
# cache, default /var/cache/snn-gpu-debs).
#
# .gpu-carry/ layout (made by --prepare):
#   prefix.tar.gz            usr/...: Debian 12 files: HDF5 C/C++ (serial), Eigen, CLI11, nlohmann-json,
#                            Catch2 v2, zlib headers, and the runtime closure of libhdf5_serial{,_cpp}.so;
#                            a tarball because it is 3x smaller and one file instead of ~1500 (GPU mode
#                            unpacks it into build-gpu-prefix/, which CMake and the loader then use)
#   models/*.snn.h5          the example models converted here (the importer needs LibTorch)
#   models/vgg_qcfs.npy/     the VGG model as .npy files, for a python without h5py (bench/export_npy)
#   fashion-mnist/t10k-*.gz  the Fashion-MNIST test set (SNNC_FASHION_MNIST_DIR points here)
#   MANIFEST.txt             what is in it, from which package versions
#
# RISK (glibc): the carried libraries are Debian 12 builds (glibc 2.36, OpenSSL 3.0, libcurl 7.88).
# They load on any x86-64 Linux with glibc >= 2.36, but fail with "GLIBC_2.3x not found" on an older
# one. The lent machine's glibc has not been read yet (its python3 3.12.3 suggests Ubuntu 24.04, glibc
# 2.39); gpu.txt records it. And because LD_LIBRARY_PATH
# puts them first, every program this script starts (python3 and torch too) sees Debian's libz,
# libcrypto/libssl, libcurl, gnutls... before the machine's own: same sonames and ABI, but a program
# that needs a newer symbol from them would fail to load. Our own python3 calls run with the
# original LD_LIBRARY_PATH; bench scripts get SNN_GPU_ORIG_LD_LIBRARY_PATH to do the same.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
CARRY=$ROOT/.gpu-carry
UNPACKED=$ROOT/build-gpu-prefix  # GPU mode unpacks the prefix here: ignored (/build*/), so it never travels
PREFIX=$UNPACKED/usr              # set by unpack_prefix
MULTIARCH=x86_64-linux-gnu
PYTHON=${PYTHON:-python3}
CARRY_LIMIT_MB=${SNN_GPU_CARRY_LIMIT_MB:-40}
START_S=$(date +%s)

log() { printf '[gpu %4ss] %s\n' "$(($(date +%s) - START_S))" "$*" >&2; }
die() { log "error: $*"; exit 2; }

# ------------------------------------------------------------------------------------------------------
# CMake arguments that point the project at the carried prefix (GPU mode and --check-carry).
carry_cmake_args() {
  local c=$PREFIX
  local args=(
    "-DCMAKE_PREFIX_PATH=$c"
    "-DCMAKE_LIBRARY_PATH=$c/lib/$MULTIARCH"
    "-DCMAKE_INCLUDE_PATH=$c/include"
    "-DHDF5_ROOT=$c/lib/$MULTIARCH/hdf5/serial"
    "-DHDF5_NO_FIND_PACKAGE_CONFIG_FILE=ON"
    "-DZLIB_ROOT=$c"
    "-DEigen3_DIR=$c/share/eigen3/cmake"
    "-DCLI11_DIR=$c/share/cmake/CLI11"
    "-Dnlohmann_json_DIR=$c/share/cmake/nlohmann_json"
    "-DCatch2_DIR=$c/lib/cmake/Catch2"
    # CMake 4 refuses packages whose files ask for policies older than 3.5; older CMake ignores this.
    "-DCMAKE_POLICY_VERSION_MINIMUM=3.5"
  )
  printf '%s\n' "${args[@]}"
}

# unpack_prefix DIR: unpacks .gpu-carry/prefix.tar.gz into DIR (unless DIR already holds this very
# tarball's contents) and points PREFIX at DIR/usr.
unpack_prefix() {
  local dir=$1 tarball=$CARRY/prefix.tar.gz stamp
  [ -f "$tarball" ] || die "no $tarball (run tests/gpu/run.sh --prepare on the dev machine, and carry .gpu-carry)"
  stamp=$(cksum <"$tarball")
  if [ ! -f "$dir/.unpacked" ] || [ "$(cat "$dir/.unpacked")" != "$stamp" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    if ! tar -xzf "$tarball" -C "$dir" 2>/dev/null; then
      py -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$tarball" "$dir" ||
        die "cannot unpack $tarball"
    fi
    echo "$stamp" >"$dir/.unpacked"
  fi
  PREFIX=$dir/usr
}

carry_env() {
  [ -d "$PREFIX/lib/$MULTIARCH" ] || die "no carried prefix at $PREFIX"
  export SNN_GPU_ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
  export LD_LIBRARY_PATH="$PREFIX/lib/$MULTIARCH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CMAKE_PREFIX_PATH="$PREFIX${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export HDF5_ROOT="$PREFIX/lib/$MULTIARCH/hdf5/serial"
  export CPATH="$PREFIX/include${CPATH:+:$CPATH}"
}

# Python runs with the machine's own libraries, not the carried ones.
py() { LD_LIBRARY_PATH=${SNN_GPU_ORIG_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}} "$PYTHON" "$@"; }

find_nvcc() {
  if [ -n "${CUDACXX:-}" ] && [ -x "$CUDACXX" ]; then echo "$CUDACXX"; return; fi
  command -v nvcc 2>/dev/null && return
  for n in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do [ -x "$n" ] && { echo "$n"; return; }; done
  return 1
}

# Prefixes of the pip NVIDIA wheels (site-packages/nvidia/<pkg>, each with lib/ and include/). nvidia
# may be a namespace package (no __file__), so look at its __path__ and at every sys.path entry.
pip_cuda_prefixes() {
  py - <<'EOF' 2>/dev/null
import glob, os, sys
roots = []
try:
    import nvidia
    roots += list(getattr(nvidia, "__path__", []) or [])
    if getattr(nvidia, "__file__", None):
        roots.append(os.path.dirname(nvidia.__file__))
except Exception:
    pass
for sp in sys.path:
    if sp and os.path.isdir(os.path.join(sp, "nvidia")):
        roots.append(os.path.join(sp, "nvidia"))
seen = set()
for r in roots:
    r = os.path.realpath(r)
    for d in sorted(glob.glob(os.path.join(r, "*"))):
        if d in seen or not os.path.isdir(os.path.join(d, "lib")):
            continue
        seen.add(d)
        print(d)
EOF
}

# ======================================================================================================
# --prepare
# ======================================================================================================
# Libraries of glibc and of GCC's runtime: never carried (the GPU machine has its own, and mixing
# glibc pieces breaks the loader).
EXCLUDE_RE='^(linux-vdso\.so|ld-linux|libc\.so|libm\.so|libmvec\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so|libnsl\.so|libstdc\+\+\.so|libgcc_s\.so)'
DEV_PKGS=(libhdf5-dev libeigen3-dev libcli11-dev nlohmann-json3-dev catch2 zlib1g-dev)

# Downloads the .debs of the packages given into the current folder (a cache: files already there
# are kept), at the installed version where the archive still has it, else at the candidate.
deb_download() {
  local pkg ver specs=() todo=()
  for pkg in "$@"; do
    ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
    if [ -n "$ver" ] && compgen -G "${pkg}_${ver/:/%3a}_*.deb" >/dev/null; then continue; fi  # epoch: 1%3a
    specs+=("$pkg${ver:+=$ver}")
    todo+=("$pkg")
  done
  [ ${#specs[@]} -eq 0 ] && return 0
  apt-get download -q "${specs[@]}" >/dev/null 2>&1 && return 0
  for pkg in "${todo[@]}"; do  # one by one; the candidate where the installed version is gone
    ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
    { [ -n "$ver" ] && apt-get download -q "$pkg=$ver" >/dev/null 2>&1; } ||
      apt-get download -q "$pkg" >/dev/null 2>&1 || { log "apt-get download $pkg failed"; return 1; }
  done
}

prepare() {
  for t in apt-get dpkg-deb dpkg-query ldd; do command -v $t >/dev/null || die "--prepare needs $t (Debian 12)"; done
  local sys_h5=/usr/lib/$MULTIARCH/libhdf5_serial.so sys_h5cpp=/usr/lib/$MULTIARCH/libhdf5_serial_cpp.so
  [ -e "$sys_h5" ] && [ -e "$sys_h5cpp" ] || die "install libhdf5-dev here first (its runtime closure is read from the installed libraries)"

  local work new=$ROOT/.gpu-carry.new
  work=$(mktemp -d /tmp/snn-gpu-prepare.XXXXXX)
  PREP_TMP="$work $new"
  trap 'rm -rf $PREP_TMP' EXIT
  rm -rf "$new"
  mkdir -p "$work/prefix" "$new/models" "$new/fashion-mnist" "$work/debs" "$work/x"

  # (a) the prefix: dev packages + the packages of every library in libhdf5's ldd closure.
  local closure=() pkgs=("${DEV_PKGS[@]}") lib name real pkg t
  while read -r name lib; do
    [[ "$name" =~ $EXCLUDE_RE ]] && continue
    [ -n "$lib" ] && [ -e "$lib" ] || die "ldd: $name not found"
    closure+=("$name")
    real=$(readlink -f "$lib")
    pkg=$(dpkg -S "$real" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || dpkg -S "${real/#\/usr\/lib\//\/lib\/}" 2>/dev/null || true)
    pkg=${pkg%%:*}
    [ -n "$pkg" ] || die "no Debian package owns $real"
    pkgs+=("$pkg")
  done < <(ldd "$sys_h5" "$sys_h5cpp" | awk '$2 == "=>" {print $1, $3}' | sort -u)
  for lib in "$sys_h5" "$sys_h5cpp"; do  # the packages of the two libraries themselves
    pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null) || die "no Debian package owns $(readlink -f "$lib")"
    pkgs+=("${pkg%%:*}")
  done
  mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
  log "downloading ${#pkgs[@]} packages: ${pkgs[*]}"
  local cache=${SNN_GPU_DEB_CACHE:-/var/cache/snn-gpu-debs} d v p
  mkdir -p "$cache"
  (cd "$cache" && deb_download "${pkgs[@]}") || die "apt-get download failed (apt-get update first?)"
  for p in "${pkgs[@]}"; do
    v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
    d=$(ls -t "$cache/${p}_${v/:/%3a}"_*.deb 2>/dev/null | head -1)
    [ -n "$d" ] || d=$(ls -t "$cache/${p}"_*.deb 2>/dev/null | head -1)
    [ -n "$d" ] || die "no .deb of $p in $cache"
    cp "$d" "$work/debs/" && dpkg-deb -x "$d" "$work/x"
  done
  # merged /usr: the packages still put some files under /lib.
  if [ -d "$work/x/lib" ]; then cp -a "$work/x/lib/." "$work/x/usr/lib/" && rm -rf "$work/x/lib"; fi

  local x=$work/x/usr p=$work/prefix/usr la=lib/$MULTIARCH
  mkdir -p "$p/$la" "$p/lib/cmake" "$p/share/cmake"
  cp -a "$x/include" "$p/"
  cp -a "$x/share/eigen3" "$p/share/"
  cp -a "$x/share/cmake/CLI11" "$x/share/cmake/nlohmann_json" "$p/share/cmake/"
  cp -a "$x/lib/cmake/Catch2" "$p/lib/cmake/"
  cp -a "$x"/lib/libCatch2*.a "$p/lib/" 2>/dev/null
  cp -a "$x/$la/hdf5" "$p/$la/"
  [ -d "$x/share/pkgconfig" ] && cp -a "$x/share/pkgconfig" "$p/share/"
  [ -d "$x/$la/pkgconfig" ] && cp -a "$x/$la/pkgconfig" "$p/$la/"
  # the link-time names (libhdf5_serial.so, libhdf5_serial_cpp.so, libz.so) and the runtime closure:
  # each SONAME link and the file it points to
  local f
  for name in libhdf5_serial.so libhdf5_serial_cpp.so libz.so "${closure[@]}"; do
    f=$x/$la/$name
    [ -e "$f" ] || die "$name is not in the downloaded packages"
    while [ -L "$f" ]; do  # the link, every link it goes through, and the file
      cp -a "$f" "$p/$la/"
      t=$(readlink "$f")
      if [[ "$t" == /* ]]; then f=$work/x${t/#\/lib\//\/usr\/lib\/}; else f=$(dirname "$f")/$t; fi
    done
    cp -a "$f" "$p/$la/"
  done
  # every link to a file we carry (the SONAME links: libhdf5_serial_cpp.so.103 is in nobody's ldd
  # output but its own users')
  for l in "$x/$la"/*; do
    [ -L "$l" ] && [ -f "$p/$la/$(basename "$(readlink -f "$l")")" ] && cp -a "$l" "$p/$la/"
  done
  # absolute symlinks (libz.so -> /lib/...) become relative ones inside the prefix; dangling ones
  # (the Fortran and high-level HDF5 libraries we do not carry) go.
  local l
  while IFS= read -r l; do
    t=$(readlink "$l")
    if [[ "$t" == /* ]]; then
      t=${t/#\/lib\//\/usr\/lib\/}
      if [ -e "$work/prefix$t" ]; then ln -sfn "$(realpath --relative-to="$(dirname "$l")" "$work/prefix$t")" "$l"; fi
    fi
    [ -e "$l" ] || rm -f "$l"
  done < <(find "$work/prefix" -type l)
  # not needed by snnc: static and libtool archives (but Catch2's config insists on its
  # libCatch2WithMain.a), docs, Eigen's unsupported modules (snnc includes Eigen/Core only), HDF5's
  # Fortran modules
  find "$work/prefix" \( -name '*.a' -o -name '*.la' -o -name '*.mod' \) ! -name 'libCatch2WithMain.a' -delete
  rm -rf "$p/share/doc" "$p/share/man" "$p/share/lintian" "$p/include/eigen3/unsupported"

  # the closure must resolve inside the prefix alone
  local missing
  missing=$(env -i LD_LIBRARY_PATH="$p/$la" ldd "$p/$la/libhdf5_serial_cpp.so" "$p/$la/libhdf5_serial.so" |
            awk '$2 == "=>" {print $1, $3}' | grep -Ev "$EXCLUDE_RE" | grep -v " $p/" || true)
  [ -z "$missing" ] || die "libraries outside the prefix: $missing"
  if command -v readelf >/dev/null; then  # each carried library is there under its SONAME
    for f in "$p/$la"/*.so*; do
      [ -L "$f" ] && continue
      name=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
      [ -z "$name" ] || [ -e "$p/$la/$name" ] || die "$(basename "$f") is not there under its SONAME $name"
    done
  fi
  (cd "$work/prefix" && tar --owner=0 --group=0 -czf "$new/prefix.tar.gz" usr) || die "tar failed"
  log "prefix: $(du -sh --apparent-size "$work/prefix" | cut -f1) unpacked, $(du -sh "$new/prefix.tar.gz" | cut -f1) packed, ${#closure[@]} runtime libraries"

  # (b) the example models, converted with snnc's TorchScript importer (LibTorch: here only).
  local snnc=${SNNC:-$ROOT/build/tools/snnc}
  if [ ! -x "$snnc" ]; then
    log "no snnc at $snnc: building it (cmake -S . -B build; set SNNC=path to skip)"
    { cmake -S . -B build -G Ninja >/dev/null && cmake --build build -j"${JOBS:-2}" --target snnc; } >&2 ||
      die "building snnc failed"
    snnc=$ROOT/build/tools/snnc
  fi
  local m
  for m in vgg_qcfs resnet_relu; do
    log "converting examples/models/$m.pt"
    "$snnc" convert "examples/models/$m.pt" -o "$new/models/$m.snn.h5" --data fashion-mnist:train \
      --mean 0.2860 --std 0.3530 --quiet >&2 ||
      die "snnc convert $m failed (is $snnc built with the TorchScript importer, SNN_WITH_TORCH?)"
  done

  # (c) the Fashion-MNIST test set
  local fm=${SNNC_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
  cp "$fm"/t10k-images-idx3-ubyte.gz "$fm"/t10k-labels-idx1-ubyte.gz "$new/fashion-mnist/" ||
    die "no Fashion-MNIST test set in $fm (Debian: dataset-fashion-mnist)"

  # (d) what the bench tools need: the VGG model as .npy files for a python without h5py.
  local export_npy=${EXPORT_NPY:-}
  for cand in "$ROOT/build/bench/export_npy" "$ROOT/build-gpu-dry/bench/export_npy"; do
    [ -z "$export_npy" ] && [ -x "$cand" ] && export_npy=$cand
  done
  if [ -z "$export_npy" ] && { [ -f bench/export_npy.cpp ] || [ -d bench/export_npy ]; }; then
    log "building bench/export_npy"
    { [ -f build/build.ninja ] || cmake -S . -B build -G Ninja >/dev/null; } && cmake --build build -j"${JOBS:-2}" --target export_npy >&2 &&
      export_npy=$ROOT/build/bench/export_npy
  fi
  if [ -n "$export_npy" ] && [ -x "$export_npy" ]; then
    if ! "$export_npy" "$new/models/vgg_qcfs.snn.h5" "$new/models/vgg_qcfs.npy" >/dev/null; then
      log "warning: $export_npy failed; bench/gpu_network_bench.sh will export on the GPU machine instead"
      rm -rf "$new/models/vgg_qcfs.npy"
    fi
  else
    # bench/gpu_network_bench.sh exports it there itself when it is missing (a few seconds).
    log "no export_npy built: .gpu-carry/models/vgg_qcfs.npy/ not written (EXPORT_NPY=path)"
  fi

  # manifest, size check, then swap in atomically
  {
    echo "# .gpu-carry, made by tests/gpu/run.sh --prepare on $(date -u +%Y-%m-%dT%H:%MZ), $(. /etc/os-release; echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{print $NF}')"
    echo "# packages"
    for d in "$work"/debs/*.deb; do dpkg-deb -f "$d" Package Version | paste -sd' '; done
    echo "# runtime libraries (prefix.tar.gz: usr/lib/$MULTIARCH)"
    printf '%s\n' "${closure[@]}"
    echo "# models"
    (cd "$new" && find prefix.tar.gz models fashion-mnist -type f | sort | xargs sha256sum)
  } >"$new/MANIFEST.txt"
  local kb
  kb=$(du -sk "$new" | cut -f1)
  [ "$kb" -le $((CARRY_LIMIT_MB * 1024)) ] || die ".gpu-carry would be $((kb / 1024)) MB, over $CARRY_LIMIT_MB MB"
  rm -rf "$CARRY" && mv "$new" "$CARRY"
  log ".gpu-carry: $((kb / 1024)) MB ($kb KiB)"
  du -sh "$CARRY"/* >&2
  cat <<EOF

Ready. On the lent GPU machine, call the device tool's run with:
  command:   bash tests/gpu/run.sh
  carry:     [".gpu-carry"]
  timeout_s: 540
Results come back in \$OUT: summary.txt gpu.txt build.txt gpu_tests.txt neuron_kernel_bench.json
network_bench.json bench_log.txt. The script keeps itself under ${SNN_GPU_BUDGET_S:-450} s (SNN_GPU_BUDGET_S).
EOF
}

# ======================================================================================================
# --check-carry: the carried prefix alone must be enough
# ======================================================================================================
HIDE_DIRS=(/usr/include/hdf5 /usr/include/eigen3 /usr/include/catch2 /usr/include/nlohmann /usr/include/CLI
           /usr/lib/cmake/Catch2 /usr/share/eigen3 /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json
           "/usr/lib/$MULTIARCH/hdf5")
# (not libz.so: it is a link, and a bind mount would hide the runtime libz.so.1 it points to, which
# the GPU machine has too; the CMake cache check below catches a system libz instead)
hide_files() {
  ls -d /usr/include/zlib.h /usr/include/zconf.h /usr/bin/h5cc /usr/bin/h5c++ /usr/lib/libCatch2*.a \
        /usr/lib/$MULTIARCH/libhdf5* /usr/lib/$MULTIARCH/libsz.so* /usr/lib/$MULTIARCH/libaec.so* 2>/dev/null
}

can_hide() { [ "${SNN_GPU_HIDDEN:-}" != 1 ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; }
# rerun this script with the given arguments in a mount namespace where the system's dev files of the
# carried packages are hidden (empty folders; files replaced by /dev/null, so using one fails loudly)
run_hidden() {
  log "hiding the system's HDF5/Eigen/CLI11/nlohmann-json/Catch2/zlib dev files in a mount namespace"
  local files
  files=$(hide_files | tr '\n' ' ')
  # shellcheck disable=SC2016
  HIDE_FILES=$files unshare -m bash -c '
    set -e
    script=$1; arg=$2; shift 2
    for d in "$@"; do if [ -d "$d" ]; then mount -t tmpfs -o ro,size=4k none "$d"; fi; done
    for f in $HIDE_FILES; do mount --bind /dev/null "$f"; done
    SNN_GPU_HIDDEN=1 exec "$script" $arg' _ "$0" "$1" "${HIDE_DIRS[@]}"
}

check_carry() {
  if can_hide; then run_hidden --check-carry; return $?; fi
  [ "${SNN_GPU_HIDDEN:-}" = 1 ] || log "not root or no mount namespaces: system files stay visible; CMAKE_IGNORE_PREFIX_PATH only"
  local t
  t=$(mktemp -d /tmp/snn-check-carry.XXXXXX)
  unpack_prefix "$t/prefix"  # a fresh unpack, as on the GPU machine
  carry_env
  mkdir -p "$t/src"
  cat >"$t/src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(carry_check LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(HDF5 REQUIRED COMPONENTS C CXX)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Catch2 REQUIRED)
include(Catch)
add_executable(carry_check main.cpp)
target_include_directories(carry_check PRIVATE ${HDF5_INCLUDE_DIRS})
target_compile_definitions(carry_check PRIVATE ${HDF5_DEFINITIONS})
target_link_libraries(carry_check PRIVATE Eigen3::Eigen ${HDF5_LIBRARIES} ZLIB::ZLIB nlohmann_json::nlohmann_json
                      CLI11::CLI11 Catch2::Catch2)
get_target_property(eigen_inc Eigen3::Eigen INTERFACE_INCLUDE_DIRECTORIES)
get_target_property(json_inc nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
get_target_property(cli_inc CLI11::CLI11 INTERFACE_INCLUDE_DIRECTORIES)
get_target_property(catch_inc Catch2::Catch2 INTERFACE_INCLUDE_DIRECTORIES)
foreach(v HDF5_INCLUDE_DIRS HDF5_LIBRARIES ZLIB_INCLUDE_DIRS ZLIB_LIBRARIES eigen_inc json_inc cli_inc catch_inc)
  message(STATUS "carry-check ${v} = ${${v}}")
  foreach(item IN LISTS ${v})
    if(NOT item MATCHES "^${CARRY_PREFIX}")
      message(FATAL_ERROR "carry-check: ${v} has ${item}, outside the carried prefix ${CARRY_PREFIX}")
    endif()
  endforeach()
endforeach()
EOF
  cat >"$t/src/main.cpp" <<'EOF'
#define CATCH_CONFIG_RUNNER
#include <zlib.h>
#include <CLI/CLI.hpp>
#include <Eigen/Dense>
#include <H5Cpp.h>
#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
TEST_CASE("eigen") { Eigen::Matrix2f m; m << 1, 2, 3, 4; REQUIRE(m.determinant() == Approx(-2.0f)); }
int main(int argc, char** argv) {
  CLI::App app{"carry check"};
  std::string path = "/tmp/carry_check.h5";
  app.add_option("--file", path);
  CLI11_PARSE(app, argc, argv);
  {
    H5::H5File f(path, H5F_ACC_TRUNC);
    const hsize_t n = 4;
    H5::DataSpace s(1, &n);
    const float v[4] = {1, 2, 3, 4};
    f.createDataSet("x", H5::PredType::NATIVE_FLOAT, s).write(v, H5::PredType::NATIVE_FLOAT);
  }
  float r[4] = {};
  H5::H5File(path, H5F_ACC_RDONLY).openDataSet("x").read(r, H5::PredType::NATIVE_FLOAT);
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  nlohmann::json j = {{"hdf5", std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel)},
                      {"zlib", zlibVersion()}, {"roundtrip", r[3] == 4.0f}};
  std::printf("%s\n", j.dump().c_str());
  const char* cargs[] = {"carry_check"};
  return Catch::Session().run(1, cargs) != 0 || r[3] != 4.0f;
}
EOF
  local args rc=0
  mapfile -t args < <(carry_cmake_args)
  log "configuring + building a tiny project against $PREFIX"
  if cmake -S "$t/src" -B "$t/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${args[@]}" \
       "-DCARRY_PREFIX=$PREFIX" "-DCMAKE_IGNORE_PREFIX_PATH=/usr;/usr/local;/" \
       "-DCMAKE_SYSTEM_IGNORE_PREFIX_PATH=/usr;/usr/local;/" >"$t/configure.txt" 2>&1 &&
     cmake --build "$t/build" >"$t/build.txt" 2>&1; then
    grep "carry-check" "$t/configure.txt" >&2
    if "$t/build/carry_check" --file "$t/x.h5"; then
      log "tiny project: OK; it loads:"
      ldd "$t/build/carry_check" | grep -E "hdf5|libz|curl|sz" >&2
      if ldd "$t/build/carry_check" | grep -E "hdf5|libsz|libcurl" | grep -v "$PREFIX" >&2; then
        log "error: libraries above come from outside the prefix"; rc=1
      fi
    else
      log "error: the tiny program failed"; rc=1
    fi
  else
    tail -n 40 "$t/configure.txt" "$t/build.txt" >&2; log "error: the tiny project did not configure/build"; rc=1
  fi

  # The real project: configure only (importer off, CUDA off here unless nvcc exists: it does not
  # change which packages are searched), with the same arguments as on the GPU machine.
  log "configuring the real project against $PREFIX (no build)"
  if cmake -S "$ROOT" -B "$t/project" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSNN_WITH_TORCH=OFF \
       -DSNN_WITH_CUDA=OFF "${args[@]}" "-DCMAKE_IGNORE_PREFIX_PATH=/usr;/usr/local" >"$t/project.txt" 2>&1; then
    local bad
    bad=$(grep -E '^(HDF5_[A-Z_]*LIBRARY[A-Z_]*|ZLIB_LIBRARY[A-Z_]*|ZLIB_INCLUDE_DIR|HDF5_[A-Z_]*INCLUDE_DIR|Eigen3_DIR|CLI11_DIR|nlohmann_json_DIR|Catch2_DIR)[:=]' \
          "$t/project/CMakeCache.txt" | grep -v "NOTFOUND" | grep -v "$PREFIX" | grep -E '=/' || true)
    if [ -n "$bad" ]; then log "error: the project found these outside the prefix:"; echo "$bad" >&2; rc=1
    else log "real project: configured, every package from the prefix"; fi
  else
    tail -30 "$t/project.txt" >&2; log "error: the real project did not configure against the prefix"; rc=1
  fi
  rm -rf "$t"
  return $rc
}

# ======================================================================================================
# --dry-run (no GPU)
# ======================================================================================================
dry_run() {
  # SNN_GPU_DRY_BUILD=DIR reuses an existing CUDA-enabled build (CI's own) instead of configuring another.
  local rc=0 b=${SNN_GPU_DRY_BUILD:-$ROOT/build-gpu-dry} nvcc jobs=${JOBS:-$(nproc)}
  log "bash -n"
  for s in tests/gpu/run.sh bench/*.sh tests/*/*.sh; do
    [ -f "$s" ] || continue
    bash -n "$s" || { log "error: bash -n $s"; rc=1; }
  done
  nvcc=$(find_nvcc) || die "no nvcc (the dry run builds the CUDA backend; CUDACXX=path)"

  log "cmake/CudaLibraries.cmake: scratch project"
  local t
  t=$(mktemp -d /tmp/snn-cuda-libs.XXXXXX)
  if cmake -S tests/gpu/cuda_libs_check -B "$t" -G Ninja -DCMAKE_CUDA_COMPILER="$nvcc" \
       -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" >"$t.log" 2>&1 &&
     cmake --build "$t" >>"$t.log" 2>&1 && "$t/cuda_libs_check" >>"$t.log" 2>&1; then
    grep -E "snnc:|cudnn header|cublas major" "$t.log" >&2
  else
    tail -30 "$t.log" >&2; log "error: CudaLibraries.cmake check"; rc=1
  fi
  rm -rf "$t" "$t.log"

  log "configure + build $b (importer off, CUDA on, system packages, -j$jobs)"
  local t0=$SECONDS
  mkdir -p "$b"
  if [ -n "${SNN_GPU_DRY_BUILD:-}" ]; then
    grep -q '^CMAKE_CUDA_FLAGS:' "$b/CMakeCache.txt" 2>/dev/null ||
      die "SNN_GPU_DRY_BUILD=$b is not a configured CUDA build"
    if cmake --build "$b" -j"$jobs" >"$b/dry-build.log" 2>&1; then log "build OK in $((SECONDS - t0)) s (reused $b)";
    else tail -n 60 "$b/dry-build.log" >&2; log "error: the build failed"; rc=1; fi
  elif cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSNN_WITH_TORCH=OFF -DSNN_WITH_CUDA=ON \
       -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DSNN_NATIVE=ON \
       >"$b/dry-configure.log" 2>&1 && cmake --build "$b" -j"$jobs" >"$b/dry-build.log" 2>&1; then
    log "build OK in $((SECONDS - t0)) s"
  else
    tail -n 60 "$b/dry-configure.log" "$b/dry-build.log" >&2; log "error: the build failed (logs: $b/dry-*.log)"; rc=1
  fi

  log "GPU tests without a GPU: each must skip (exit 77)"
  if [ -f "$b/CTestTestfile.cmake" ]; then
    local out n_total n_skip
    out=$(ctest --test-dir "$b" -L gpu --no-tests=error --output-on-failure 2>&1)
    local crc=$?
    echo "$out" | tail -15 >&2
    n_total=$(echo "$out" | grep -cE '^ *[0-9]+/[0-9]+ Test +#')
    n_skip=$(echo "$out" | grep -E '^ *[0-9]+/[0-9]+ Test +#' | grep -c 'Skipped')
    if [ "$crc" -ne 0 ] || [ "$n_total" -eq 0 ] || [ "$n_skip" -ne "$n_total" ]; then
      log "error: expected every gpu-labelled test to skip ($n_skip of $n_total skipped, ctest rc $crc)"; rc=1
    else
      log "$n_skip of $n_total gpu tests skipped cleanly"
    fi
  fi
  if [ -x "$b/bench/neuron_kernel_bench" ]; then
    "$b/bench/neuron_kernel_bench" >/dev/null 2>&1
    local brc=$?
    if [ $brc -eq 77 ]; then log "neuron_kernel_bench: skips without a GPU (77)"
    else log "error: neuron_kernel_bench exited $brc without a GPU (expected 77)"; rc=1; fi
  fi

  if [ -f "$CARRY/prefix.tar.gz" ]; then
    log ".gpu-carry exists: checking it too"
    "$0" --check-carry || rc=1
  fi
  log "dry run: $([ $rc -eq 0 ] && echo OK || echo FAILED) in $(($(date +%s) - START_S)) s"
  return $rc
}

# ======================================================================================================
# GPU mode
# ======================================================================================================
STATUS=()  # "step: ok|FAILED ..." lines
note() { STATUS+=("$1"); log "$1"; }
# seconds left for a step: its own cap, but never past the overall budget (minus a reserve)
left() {
  local cap=$1 rest
  rest=$((DEADLINE - $(date +%s) - 15))
  [ "$rest" -lt "$cap" ] && cap=$rest
  [ "$cap" -lt 5 ] && cap=5
  echo "$cap"
}

gpu_run() {
  OUT=${OUT:-$ROOT/gpu-results}
  mkdir -p "$OUT"
  local budget=${SNN_GPU_BUDGET_S:-450}
  DEADLINE=$((START_S + budget))
  local b=$ROOT/build-gpu fail=0 s
  [ -d "$CARRY" ] || die ".gpu-carry is missing: run tests/gpu/run.sh --prepare on the dev machine and carry it"
  unpack_prefix "$UNPACKED"
  carry_env

  # --- the GPU --------------------------------------------------------------------------------------
  local arch=${CUDA_ARCH:-} gpu_line
  gpu_line=$(timeout 20 nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)
  {
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm)"
    timeout 20 nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
    timeout 20 nvidia-smi
    echo "# nvcc"; timeout 20 "$(find_nvcc || echo nvcc)" --version
    echo "# cmake"; cmake --version | head -1
    echo "# ninja"; ninja --version
    echo "# c++"; c++ --version | head -1
    echo "# glibc"; ldd --version | head -1
    echo "# python"; timeout 60 env LD_LIBRARY_PATH="$SNN_GPU_ORIG_LD_LIBRARY_PATH" "$PYTHON" -c 'import sys, torch; print(sys.executable, torch.__version__, torch.version.cuda, torch.cuda.is_available())'
  } >"$OUT/gpu.txt" 2>&1
  if [ -z "$arch" ]; then
    arch=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
    [[ "$arch" =~ ^[0-9]+$ ]] || arch=90
  fi
  log "GPU: ${gpu_line:-none}"

  # --- the pip CUDA libraries -----------------------------------------------------------------------
  local hints=() h libpath=""
  mapfile -t hints < <(pip_cuda_prefixes)
  for h in "${hints[@]}"; do libpath+=":$h/lib"; done
  # the toolkit's own lib dir first, so cuBLAS at run time is the one we linked against
  local nvcc tkl
  nvcc=$(find_nvcc) || { note "nvcc: FAILED (not found)"; fail=1; }
  tkl=$(cd "$(dirname "${nvcc:-/usr/local/cuda/bin/nvcc}")/.." 2>/dev/null && pwd)
  for d in "$tkl/lib64" "$tkl/lib" "$tkl/targets/x86_64-linux/lib"; do [ -d "$d" ] && { libpath=":$d$libpath"; break; }; done
  export LD_LIBRARY_PATH="$PREFIX/lib/$MULTIARCH$libpath${SNN_GPU_ORIG_LD_LIBRARY_PATH:+:$SNN_GPU_ORIG_LD_LIBRARY_PATH}"
  local hint_list
  hint_list=$(IFS=';'; echo "${hints[*]}")
  echo "# pip CUDA prefixes (SNN_CUDA_LIB_HINTS): ${hint_list:-none}" >>"$OUT/gpu.txt"
  echo "# LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >>"$OUT/gpu.txt"

  # --- configure + build ----------------------------------------------------------------------------
  local args
  mapfile -t args < <(carry_cmake_args)
  log "configure (CUDA arch $arch)"
  if timeout "$(left 120)" cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSNN_WITH_TORCH=OFF \
       -DSNN_WITH_CUDA=ON ${nvcc:+-DCMAKE_CUDA_COMPILER="$nvcc"} -DCMAKE_CUDA_ARCHITECTURES="$arch" -DSNN_NATIVE=ON \
       "-DSNN_CUDA_LIB_HINTS=$hint_list" "${args[@]}" >"$OUT/build.txt" 2>&1; then
    note "configure: ok"
    log "build (-j${JOBS:-$(nproc)})"
    echo "# ---- build" >>"$OUT/build.txt"
    if timeout "$(left "${SNN_GPU_BUILD_S:-300}")" cmake --build "$b" -j"${JOBS:-$(nproc)}" -- -k 0 >>"$OUT/build.txt" 2>&1; then
      note "build: ok"
    else
      note "build: FAILED (last lines below; full log build.txt)"; fail=1
      tail -60 "$OUT/build.txt" >&2
    fi
  else
    note "configure: FAILED"; fail=1
    tail -60 "$OUT/build.txt" >&2
  fi

  # --- the CPU-vs-CUDA agreement tests ----------------------------------------------------------------
  export SNNC_FASHION_MNIST_DIR=$CARRY/fashion-mnist
  export SNN_GPU_MODELS_DIR=$CARRY/models
  if [ -f "$b/CTestTestfile.cmake" ]; then
    log "ctest -L gpu"
    timeout "$(left 200)" ctest --test-dir "$b" -L gpu --no-tests=error --output-on-failure \
      --timeout "$(left 180)" >"$OUT/gpu_tests.txt" 2>&1
    local crc=$? n_pass n_fail n_skip n_total
    n_total=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#' "$OUT/gpu_tests.txt")
    n_pass=$(grep -E '^ *[0-9]+/[0-9]+ Test +#' "$OUT/gpu_tests.txt" | grep -c ' Passed')
    n_skip=$(grep -E '^ *[0-9]+/[0-9]+ Test +#' "$OUT/gpu_tests.txt" | grep -c 'Skipped')
    n_fail=$((n_total - n_pass - n_skip))
    TESTS="$n_pass passed, $n_fail failed, $n_skip skipped of $n_total"
    # on the GPU machine a skip means the GPU was not usable: that is a failure here
    if [ "$crc" -eq 0 ] && [ "$n_total" -gt 0 ] && [ "$n_fail" -eq 0 ] && [ "$n_skip" -eq 0 ]; then
      note "gpu tests: ok ($TESTS)"
    else
      note "gpu tests: FAILED ($TESTS, ctest rc $crc)"; fail=1
      grep -E '^ *[0-9]+/[0-9]+ Test +#' "$OUT/gpu_tests.txt" | grep -v ' Passed' >&2
    fi
  else
    note "gpu tests: FAILED (no build to test)"; fail=1
  fi

  # --- benchmarks -----------------------------------------------------------------------------------
  : >"$OUT/bench_log.txt"
  if [ -x "$b/bench/neuron_kernel_bench" ]; then
    log "neuron_kernel_bench"
    echo "# neuron_kernel_bench" >>"$OUT/bench_log.txt"
    if timeout "$(left 120)" "$b/bench/neuron_kernel_bench" >"$OUT/neuron_kernel_bench.json" 2>>"$OUT/bench_log.txt"; then
      note "neuron kernel bench: ok"
    else
      note "neuron kernel bench: FAILED (rc $?)"; fail=1
    fi
  else
    note "neuron kernel bench: FAILED (not built)"; fail=1
  fi
  if [ -f bench/gpu_network_bench.sh ]; then
    log "bench/gpu_network_bench.sh"
    echo "# gpu_network_bench.sh" >>"$OUT/bench_log.txt"
    local nb_out nb_s
    nb_out=$(mktemp -d /tmp/snn-network-bench.XXXXXX)
    nb_s=$(left 170)
    # its own --budget cuts its steps to fit; our timeout is the backstop
    if timeout "$nb_s" bash bench/gpu_network_bench.sh --build "$b" --models "$SNN_GPU_MODELS_DIR" \
         --fmnist "$SNNC_FASHION_MNIST_DIR" --python "$PYTHON" --device cuda --work "$nb_out" \
         --budget "$((nb_s > 30 ? nb_s - 10 : nb_s))" --combined >"$OUT/network_bench.json" 2>>"$OUT/bench_log.txt"; then
      note "network bench: ok"
    else
      note "network bench: FAILED (rc $?)"; fail=1
    fi
    rm -rf "$nb_out"
  else
    note "network bench: skipped (bench/gpu_network_bench.sh not there)"
  fi

  # --- summary --------------------------------------------------------------------------------------
  {
    echo "snnc GPU checks, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(($(date +%s) - START_S)) s of $budget s"
    echo "GPU: ${gpu_line:-none}"
    printf '%s\n' "${STATUS[@]}"
    py - "$OUT" <<'EOF' 2>&1
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception as e:
        return None
k = load("neuron_kernel_bench.json")
if k:
    for r in k.get("results", []):
        print(f"neuron kernel {r.get('neuron')}: {r.get('gb_per_s', 0):.0f} GB/s = bandwidth fraction "
              f"{r.get('fraction_of_peak', 0):.2f} (goal {r.get('goal', 0.8)}) of {k.get('peak_gb_per_s', 0):.0f} GB/s "
              f"({k.get('neurons')} neurons x {k.get('timesteps')} steps)")
    rows = k.get("kernels") or []
    if rows:
        print("kernels vs CPU twin: " + ", ".join(
            f"{r.get('layer', r.get('kernel'))} x{r.get('speedup', 0):.0f} (diff {r.get('max_abs_diff', 0):.1e})" for r in rows))
n = load("network_bench.json")
if n and isinstance(n.get("comparisons"), list):
    for c in n["comparisons"]:
        r = c.get("ratio_snnc_over_pytorch")
        sp = (c.get("snnc") or {}).get("image_timesteps_per_second")
        tp = (c.get("pytorch") or {}).get("image_timesteps_per_second")
        d = c.get("max_abs_accuracy_diff")
        print(f"network {c.get('comparison')}: snnc/pytorch = {r:.2f}" if r else f"network {c.get('comparison')}: no ratio",
              f"({sp:.0f} vs {tp:.0f} image-timesteps/s)" if sp and tp else "",
              f"max |acc diff| {d:.2f} pp" if d is not None else "",
              "" if c.get("ok") else f"NOT OK: {(c.get('snnc') or {}).get('error')} / {(c.get('pytorch') or {}).get('error')}")
elif n:
    def walk(o, path=""):
        if isinstance(o, dict):
            for key, v in o.items():
                walk(v, f"{path}.{key}" if path else key)
        elif isinstance(o, list):
            for i, v in enumerate(o):
                walk(v, f"{path}[{i}]")
        elif isinstance(o, (int, float)) and any(w in path.lower() for w in ("ratio", "speedup", "fraction")):
            print(f"network {path} = {o:.3g}")
    walk(n)
EOF
    echo "result: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
  } >"$OUT/summary.txt"
  echo "=================== summary ===================" >&2
  cat "$OUT/summary.txt" >&2
  return $fail
}

case "${1:-}" in
  --prepare) prepare ;;
  --simulate)  # GPU mode here, system dev files hidden: checks that the carry builds the project
    can_hide || die "--simulate needs root and mount namespaces (unshare -m)"
    export OUT=${OUT:-$ROOT/build-gpu-sim-results}
    run_hidden "" ;;
  --dry-run) dry_run ;;
  --check-carry) check_carry ;;
  "") gpu_run ;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
  *) die "unknown argument $1 (--prepare | --dry-run | --check-carry | none)" ;;
esac
