#!/usr/bin/env bash
# snnc CPU vs an independent PyTorch implementation (bench/torch_reference.py) on the same model, images,
# T, batch size and threads. Prints one JSON object: both throughputs (image-timesteps per second of the
# SNN simulation alone), their ratio snnc / pytorch, both accuracy curves' largest difference over t, and
# the firing-rate differences per layer.
#
#   bench/compare_torch.sh MODEL.snn.h5 [T=32] [LIMIT=1000] [THREADS=2]
#
# Environment:
#   SNNC=path/to/snnc        (default build/tools/snnc)
#   PYTHON=.venv/bin/python  (the project's venv, with torch; .ci/install-deps)
#   DATA=fashion-mnist:test  (any dataset both understand: fashion-mnist:train|test, IDX, HDF5)
#   BATCH=128
#   REPEAT=1                 (runs per side; the best throughput of each side is reported)
#   KEEP=dir                 (keep both raw JSON outputs there)
#   MALLOC=tuned             (tuned: both sides run with glibc malloc keeping freed memory instead of
#                             returning it to the system; default: glibc's own settings)
# The model is simulated as stored (its temporal biases, if calibrated, are used by both sides).
# Timing is only meaningful on an otherwise idle machine: /proc/loadavg is recorded before each run.
set -euo pipefail

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
MODEL=$1
T=${2:-32}
LIMIT=${3:-1000}
THREADS=${4:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SNNC=${SNNC:-$ROOT/build/tools/snnc}
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
DATA=${DATA:-fashion-mnist:test}
BATCH=${BATCH:-128}
REPEAT=${REPEAT:-1}
MALLOC=${MALLOC:-tuned}
# glibc returns every freed block above 32 MiB (mmap threshold, trim threshold) to the system at once, so
# a PyTorch loop that allocates its step tensors anew page-faults them in again on every step: on the
# ResNet-18 that was two thirds of PyTorch's time (sys time), and it is the first thing a PyTorch user
# tuning for speed changes (jemalloc, tcmalloc or these variables). Both sides get the same settings.
case "$MALLOC" in
  tuned) MALLOC_ENV=(MALLOC_MMAP_THRESHOLD_=17179869184 MALLOC_TRIM_THRESHOLD_=17179869184 MALLOC_TOP_PAD_=1073741824) ;;
  default) MALLOC_ENV=() ;;
  *) echo "compare_torch.sh: MALLOC must be tuned or default, not '$MALLOC'" >&2; exit 2 ;;
esac

[[ -f "$MODEL" ]] || { echo "compare_torch.sh: model not found: $MODEL" >&2; exit 1; }
[[ -x "$SNNC" ]] || { echo "compare_torch.sh: snnc not found at $SNNC (build it, or set SNNC=...)" >&2; exit 1; }
"$PYTHON" -c 'import torch, h5py' 2>/dev/null || { echo "compare_torch.sh: $PYTHON lacks torch/h5py" >&2; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# peak_rss FILE CMD...: runs CMD (stdout and exit status passed through) and writes its peak resident
# memory in KiB (getrusage of the waited-for child) to FILE.
peak_rss() {
  "$PYTHON" -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc)' "$@"
}
for ((r = 1; r <= REPEAT; r++)); do
  cut -d' ' -f1 /proc/loadavg > "$TMP/load_snnc_$r"
  peak_rss "$TMP/rss_snnc_$r" env "${MALLOC_ENV[@]}" "$SNNC" sweep "$MODEL" --data "$DATA" --T "$T" --limit "$LIMIT" --threads "$THREADS" --batch-size "$BATCH" \
    --json --device cpu > "$TMP/snnc_$r.json"
  cut -d' ' -f1 /proc/loadavg > "$TMP/load_torch_$r"
  peak_rss "$TMP/rss_torch_$r" env "${MALLOC_ENV[@]}" "$PYTHON" "$HERE/torch_reference.py" "$MODEL" --data "$DATA" --T "$T" --limit "$LIMIT" --threads "$THREADS" \
    --batch-size "$BATCH" > "$TMP/torch_$r.json"
done
if [[ -n "${KEEP:-}" ]]; then mkdir -p "$KEEP" && cp "$TMP"/*.json "$KEEP"/; fi

"$PYTHON" - "$TMP" "$REPEAT" "$MODEL" "$T" "$LIMIT" "$THREADS" "$BATCH" "$DATA" "$MALLOC" <<'EOF'
import json, os, sys
tmp, repeat = sys.argv[1], int(sys.argv[2])
model, T, limit, threads, batch, data = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), \
    int(sys.argv[7]), sys.argv[8]
malloc = sys.argv[9]
def runs(side):
    out = []
    for r in range(1, repeat + 1):
        with open(os.path.join(tmp, f"{side}_{r}.json")) as f:
            j = json.load(f)
        with open(os.path.join(tmp, f"load_{side}_{r}")) as f:
            j["_load"] = float(f.read())
        with open(os.path.join(tmp, f"rss_{side}_{r}")) as f:
            j["_rss_kib"] = int(f.read())
        out.append(j)
    return out
s_runs, p_runs = runs("snnc"), runs("torch")
s = max(s_runs, key=lambda j: j["image_timesteps_per_second"])
p = max(p_runs, key=lambda j: j["image_timesteps_per_second"])
sa, pa = s["accuracy"], p["accuracy"]
diff = [abs(a - b) for a, b in zip(sa, pa)]
tmax = max(range(len(diff)), key=lambda t: diff[t])
fr = {k: {"snnc": v, "pytorch": p["firing_rate"].get(k), "diff": None if k not in p["firing_rate"]
          else v - p["firing_rate"][k]} for k, v in s["firing_rate"].items()}
res = {
    "model": model, "data": data, "images": s["images"], "timesteps": T, "threads": threads, "batch_size": batch,
    "malloc": malloc,
    "snnc": {"image_timesteps_per_second": s["image_timesteps_per_second"], "seconds": s["seconds"],
             "runs": [j["image_timesteps_per_second"] for j in s_runs], "device": s.get("device"),
             "method": s.get("method"), "peak_rss_mib": max(j["_rss_kib"] for j in s_runs) / 1024},
    "pytorch": {"image_timesteps_per_second": p["image_timesteps_per_second"], "seconds": p["seconds"],
                "runs": [j["image_timesteps_per_second"] for j in p_runs], "torch_version": p["torch_version"],
                "chunk_steps": p.get("chunk_steps"), "peak_rss_mib": max(j["_rss_kib"] for j in p_runs) / 1024},
    "ratio_snnc_over_pytorch": s["image_timesteps_per_second"] / p["image_timesteps_per_second"],
    "ann_accuracy": {"snnc": s["ann_accuracy"], "pytorch": p["ann_accuracy"]},
    "accuracy_at_T": {"snnc": sa[-1], "pytorch": pa[-1]},
    "max_abs_accuracy_diff": max(diff),
    "max_abs_accuracy_diff_at_t": tmax + 1,
    "mean_abs_accuracy_diff": sum(diff) / len(diff),
    "one_image_in_percent": 100.0 / s["images"],
    "firing_rate": fr,
    "load_average_before_runs": {"snnc": [j["_load"] for j in s_runs], "pytorch": [j["_load"] for j in p_runs],
                                 "cpus": os.cpu_count()},
}
print(json.dumps(res, indent=2))
EOF
