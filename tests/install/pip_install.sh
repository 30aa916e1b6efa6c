#!/usr/bin/env bash
# pip install . as a new user does it: a fresh venv, `pip wheel .` gives a wheel, `pip install .` (pip's
# isolated build: scikit-build-core and pybind11 from PyPI, as pinned in pyproject.toml) installs the
# package and the CLI into it; then the installed CLI converts a .pt2 model with its faithfulness check (it
# finds the venv's python3 and the installed reference script by itself), and the Python tests
# (tests/python) run against the installed package, not the build tree; pip uninstall removes it all.
#   tests/install/pip_install.sh SOURCE_DIR WORK_DIR PROJECT_PYTHON
# The fresh venv sees torch 2.15 and pytest (with what they require, nothing else) from the project venv
# through a .pth file and a folder of links: a venv that has PyPI's torch, without copying 3 GB of wheels
# again. Everything else snnc needs (NumPy, h5py) pip must install from snnc's declared dependencies.
set -euo pipefail
src=$1 work=$2 project_python=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "pip install: $*"; exit 1; }
site_of() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }

/usr/bin/python3 -m venv "$work/venv" || fail "cannot make a venv (Debian: python3-venv)"
venv=$work/venv
"$project_python" - "$work/torch_only" << 'EOF' || fail "cannot link the project venv's torch"
import importlib.metadata as md, os, re, sys
want, seen, dists = ["torch", "pytest"], set(), []
while want:  # the requirement closure of torch and pytest, without extras or other platforms' markers
    name = re.split(r"[ ;<>=!~\[(]", want.pop())[0].lower().replace("_", "-")
    if name in seen:
        continue
    seen.add(name)
    try:
        d = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    dists.append(d)
    want += [r for r in (d.requires or []) if "extra ==" not in r]
os.makedirs(sys.argv[1])
for d in dists:  # link every top-level entry the distribution installed (its packages, its .dist-info)
    site = str(d.locate_file(""))
    for top in {str(f).split("/")[0] for f in d.files or [] if not str(f).startswith("..")}:
        src, dst = os.path.join(site, top), os.path.join(sys.argv[1], top)
        if os.path.exists(src) and not os.path.lexists(dst) and top != "__pycache__":
            os.symlink(src, dst)
EOF
echo "$work/torch_only" > "$(site_of "$venv/bin/python")/project_torch.pth"
"$venv/bin/python" -c 'import torch' || fail "the project venv's torch is not visible in the fresh venv"
"$venv/bin/python" -c 'import h5py' 2> /dev/null && fail "h5py is visible before snnc's dependencies are installed"
"$venv/bin/python" -c 'import snnc' 2> /dev/null && fail "snnc is importable before it is installed"

pip=("$venv/bin/python" -m pip --disable-pip-version-check)
# One build folder for both: the install after the wheel only re-links nothing and copies.
build=(--config-settings="build-dir=$work/build")  # (-C needs pip >= 23.1; Debian 12's venv has 23.0)
start=$(date +%s)
"${pip[@]}" wheel "$src" -w "$work/dist" --no-deps "${build[@]}" > "$work/wheel.log" 2>&1 ||
  { tail -40 "$work/wheel.log"; fail "pip wheel . failed (log: $work/wheel.log)"; }
ls "$work"/dist/snnc-*.whl > /dev/null || fail "pip wheel . wrote no wheel"
echo "pip wheel: $(basename "$work"/dist/snnc-*.whl) in $(( $(date +%s) - start )) s"
"${pip[@]}" install "$src" "${build[@]}" > "$work/install.log" 2>&1 ||
  { tail -40 "$work/install.log"; fail "pip install . failed (log: $work/install.log)"; }

# The CLI is the venv's, and runs without the build tree or the source tree's venv.
[ -x "$venv/bin/snnc" ] || fail "no snnc in $venv/bin"
"$venv/bin/snnc" --version | grep -q snnc || fail "snnc --version"
site=$(site_of "$venv/bin/python")
[ -f "$site/snnc/_reference_runtime.py" ] && [ -f "$venv/share/snnc/snnc_reference.py" ] ||
  fail "the reference runtime's script is not installed"
cd "$work"  # not the source tree: nothing may be found there by accident
env -u SNNC_PYTHON -u SNNC_REFERENCE_SCRIPT "$venv/bin/snnc" convert "$src/tests/fixtures/pt2/qcfs.pt2" \
  -o qcfs.snn.h5 --json -q > convert.json || fail "the installed CLI cannot convert a .pt2"
"$venv/bin/python" - << 'EOF' || fail "the installed CLI's faithfulness check did not run with the venv's torch"
import json
check = json.load(open("convert.json"))["faithfulness"]
assert check["checked"] and check["passed"] and check["reference"].startswith("torch 2.15"), check
print("pip install: the installed CLI checked the .pt2 against", check["reference"])
EOF

# The Python tests against the installed package.
PYTHONPATH="" SNNC_CLI="$venv/bin/snnc" SNNC_WORK="$work/pytest" SNNC_REPO="$src" \
  "$venv/bin/python" -c "import snnc, sys; assert snnc.__file__.startswith('$site/'), snnc.__file__; print('pip install: snnc', snnc.__version__, 'from', snnc.__file__)"
PYTHONPATH="" SNNC_CLI="$venv/bin/snnc" SNNC_WORK="$work/pytest" SNNC_REPO="$src" \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python" || fail "the Python tests fail on the installed package"

"${pip[@]}" uninstall -y snnc > "$work/uninstall.log" 2>&1 || fail "pip uninstall snnc"
[ ! -e "$venv/bin/snnc" ] && [ ! -e "$site/snnc" ] && [ ! -e "$venv/share/snnc/snnc_reference.py" ] ||
  fail "pip uninstall left files behind"
echo "pip install: wheel built, installed, CLI and Python tests pass from $venv, uninstalled cleanly"
