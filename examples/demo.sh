#!/usr/bin/env bash
# The whole job on the real default, from a fresh machine:
#   install → build → (reuse or train) CNN → convert → calibrate (ftbc-auto) → sweep none/ftbc/ftbc-auto → plots
# Usage: bash examples/demo.sh [--train]        (outputs in demo_out/)
set -euo pipefail
cd "$(dirname "$0")/.."

.ci/install-deps  # Debian packages, and the Python venv .venv (torch, Jupyter, ...)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2

MODEL=examples/models/vgg_qcfs.pt
if [ "${1:-}" = "--train" ] || [ ! -f "$MODEL" ]; then
  .venv/bin/python examples/train_cnn.py --arch vgg --act qcfs --epochs 4 --out "$MODEL"
fi
OUT=demo_out
mkdir -p "$OUT"
SNNC=build/tools/snnc
T=32
# Normalisation used in training (examples/train_cnn.py); stored in the model by convert.
$SNNC convert "$MODEL" -o "$OUT/vgg_qcfs.snn.h5" --data fashion-mnist:train --mean 0.2860 --std 0.3530
# The default method, ftbc-auto, with no tuning flags (its choices are made on held-out training images).
$SNNC calibrate "$OUT/vgg_qcfs.snn.h5" -o "$OUT/vgg_qcfs.calibrated.snn.h5" --T $T --data fashion-mnist:train
# The model carries ftbc-auto; plain ftbc (defaults) is calibrated inside the sweep for comparison.
$SNNC sweep "$OUT/vgg_qcfs.calibrated.snn.h5" --data fashion-mnist:test --T $T --compare none,ftbc,ftbc-auto \
  -o "$OUT/sweep.h5"
# The notebook runs in notebooks/, so it gets absolute paths; its last section sweeps the calibrated
# model again through the Python bindings (build/python) on 1000 test images.
SNNC_SWEEP="$PWD/$OUT/sweep.h5" SNNC_FIGURES="$PWD/$OUT/figures" \
  SNNC_MODEL="$PWD/$OUT/vgg_qcfs.calibrated.snn.h5" PYTHONPATH="$PWD/build/python" \
  .venv/bin/python -m nbconvert --to notebook --execute notebooks/sweep_plots.ipynb --output-dir "$OUT" \
  --output sweep_plots.ipynb >/dev/null 2>&1
echo "wrote $OUT/sweep.h5, $OUT/sweep_plots.ipynb and $OUT/figures/*.png"
