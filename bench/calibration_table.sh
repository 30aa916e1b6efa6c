#!/usr/bin/env bash
# Every calibration method × every T on one model: each method calibrates a copy of the model for T on the
# calibration data (defaults: no tuning flags, unless CALIB_ARGS adds some), then one sweep of the
# evaluation data reads the accuracy at every t <= T. Prints one JSON object per method (one line each):
# model, method, accuracy at t = 1, 2, 4, ..., T, the CNN's accuracy, calibration seconds, and the
# calibration's own record (ftbc-auto: its thresholds, choices and held-out scores).
#
#   bench/calibration_table.sh MODEL.snn.h5 [T=32] [METHODS=ftbc,ftbc-paper,ftbc-exact,ftbc-auto]
#
# PER_T=1: calibrate separately for each reported T (1, 2, 4, ..., T) and read the accuracy at that T,
# as a user who runs at T does (ftbc-auto chooses thresholds for its T); one JSON line per method and T.
# Environment: SNNC (default build/tools/snnc), CALIB_DATA (default fashion-mnist:train), DATA (default
# fashion-mnist:test), LIMIT (evaluation images, default 0 = all), CALIB_ARGS (extra calibrate options).
# The full table of the issue: for m in vgg_qcfs resnet_relu; do bench/calibration_table.sh MODEL_$m; done
set -euo pipefail
MODEL=${1:?usage: bench/calibration_table.sh MODEL.snn.h5 [T] [METHODS]}
T=${2:-32}; METHODS=${3:-ftbc,ftbc-paper,ftbc-exact,ftbc-auto}
SNNC=${SNNC:-build/tools/snnc}; CALIB_DATA=${CALIB_DATA:-fashion-mnist:train}; DATA=${DATA:-fashion-mnist:test}
LIMIT=${LIMIT:-0}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if [ "${PER_T:-0}" = 1 ]; then
  CAL_TS=$(/usr/bin/python3 -c "T=$T; print(' '.join(str(t) for t in (1,2,4,8,16,32,64,128,256) if t < T), T)")
else
  CAL_TS=$T
fi
for method in ${METHODS//,/ }; do
  for cal_t in $CAL_TS; do
    # shellcheck disable=SC2086  # CALIB_ARGS: zero or more options
    "$SNNC" calibrate "$MODEL" -o "$tmp/$method.snn.h5" --method "$method" --data "$CALIB_DATA" --T "$cal_t" \
      --quiet ${CALIB_ARGS:-} > /dev/null
    "$SNNC" info "$tmp/$method.snn.h5" --json > "$tmp/$method.info.json"
    "$SNNC" sweep "$tmp/$method.snn.h5" --data "$DATA" --limit "$LIMIT" --T "$cal_t" --json > "$tmp/$method.sweep.json"
    /usr/bin/python3 - "$MODEL" "$method" "$tmp/$method.info.json" "$tmp/$method.sweep.json" "${PER_T:-0}" <<'PY'
import json, sys
model, method, info, sweep = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
per_t = sys.argv[5] == "1"
meta = info["metadata"]
T = sweep["timesteps"]
steps = [T] if per_t else [t for t in (1, 2, 4, 8, 16, 32, 64, 128, 256) if t < T] + [T]
print(json.dumps({
    "model": model, "method": method, "calibrated_for_T": T, "images": sweep["images"],
    "ann_accuracy": sweep["ann_accuracy"],
    "accuracy": {str(t): sweep["accuracy"][t - 1] for t in steps},
    "calibration_seconds": float(meta.get("calibration.seconds", "nan")),
    "calibration": {k[len("calibration."):]: v for k, v in meta.items() if k.startswith("calibration.")
                    and k not in ("calibration.command_line", "calibration.seconds")},
}), flush=True)
PY
    rm -f "$tmp/$method.snn.h5"
  done
done
