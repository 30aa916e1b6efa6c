#!/usr/bin/env bash
# snnc's CUDA backend vs PyTorch on the GPU (bench/torch_reference.py --device cuda), on whole networks:
#   (a) vgg:      the examples VGG model (QCFS, Fashion-MNIST) as converted by snnc, on the first N
#                 Fashion-MNIST test images (labels: the real ones), T = 32, batch 128;
#   (b) resnet18: ResNet-18 with random weights on random 3x224x224 images, made on the spot by
#                 make_bench_model (thresholds: 99.9th percentile of each layer's ANN activations;
#                 labels: the ANN view's prediction, so accuracy = agreement with the CNN), exported for
#                 PyTorch by export_npy; T = 32, batch 32.
# Both sides simulate the same model on the same images with the same T and batch size; PyTorch reads
# the model from an export_npy directory and needs numpy + torch only (no h5py). Prints one JSON object
# per comparison, one per line (--combined: one object {"comparisons": [...]} at the end): both
# throughputs (image-timesteps/s of the SNN simulation alone), ratio snnc/pytorch, the accuracy curves'
# largest difference over t, firing-rate differences; a failed side is reported (error, exit code, the
# end of its stderr) and the script carries on. Exit status: 0 when every comparison ran on both sides,
# 1 otherwise, 2 for bad arguments.
#
#   bench/gpu_network_bench.sh [--build DIR] [--snnc PATH] [--python PATH] [--device cuda|cpu]
#       [--models DIR] [--vgg-model M.snn.h5] [--vgg-npy DIR] [--fmnist DIR] [--vgg-data SPEC]
#       [--vgg-torch-data SPEC] [--vgg-images 2000] [--vgg-T 32] [--vgg-batch 128]
#       [--resnet-images 96] [--resnet-T 32] [--resnet-batch 32] [--resnet-seed 1]
#       [--only vgg|resnet18] [--threads N] [--budget 140] [--work DIR] [--keep DIR] [--combined]
#       [--engine-throughput]
#
# Environment (used when the option is not given): BUILD_DIR, SNNC, PYTHON (default python3), DEVICE,
# MODELS_DIR, SNNC_FASHION_MNIST_DIR, WORK_DIR, BUDGET_S, SNN_GPU_ORIG_LD_LIBRARY_PATH (python runs
# with this LD_LIBRARY_PATH when it is set, as in tests/gpu/run.sh).
# Defaults: --build: $ROOT/build-gpu, else $ROOT/build; tools: BUILD/tools/snnc,
# BUILD/bench/{make_bench_model,export_npy,engine_throughput}. --models: $ROOT/.gpu-carry/models;
# --vgg-model: MODELS/vgg_qcfs.snn.h5; --vgg-npy: exported from --vgg-model into the work folder
# with export_npy (never stale), else M.npy/ beside M.snn.h5 if export_npy is missing.
# --fmnist: /usr/share/datasets/fashion-mnist; --vgg-data (snnc's --data):
# FMNIST/t10k-images-idx3-ubyte.gz (its labels file beside it); --vgg-torch-data: the same spec
# (torch_reference reads IDX with numpy alone). --budget: seconds for the whole script; each step has
# its own cap (30-60 s) and is cut so that the script ends within the budget (a step that does not fit
# is reported as skipped); keep --budget below any outer timeout. --device cpu runs both sides on the
# CPU (a dry run of this script without a GPU). --engine-throughput also runs
# BUILD/bench/engine_throughput --net resnet18 (snnc with a warm-up batch, random images) into the
# resnet18 comparison.
#
# Sizes are chosen to keep the whole run near a minute on an H200 (under --budget in any case): PyTorch's
# VGG at T = 32 and 2000 images is ~64k image-timesteps, its ResNet-18 at 96 images ~3k image-timesteps
# of ~3.6 GFLOP each. snnc's sweep has no warm-up batch (its first batch, with cuDNN set-up, is timed);
# torch_reference.py times after one untimed warm-up batch per batch shape.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
START_S=$(date +%s)

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
log() { printf '[gpu_network_bench %3ss] %s\n' "$(($(date +%s) - START_S))" "$*" >&2; }
bad_args() { echo "gpu_network_bench.sh: $*" >&2; echo "(--help for usage)" >&2; exit 2; }

BUILD=${BUILD_DIR:-}
SNNC_BIN=${SNNC:-}
PY=${PYTHON:-python3}
DEV=${DEVICE:-cuda}
MODELS=${MODELS_DIR:-$ROOT/.gpu-carry/models}
FMNIST=${SNNC_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
WORK=${WORK_DIR:-}
BUDGET=${BUDGET_S:-140}
VGG_MODEL="" VGG_NPY="" VGG_DATA="" VGG_TORCH_DATA=""
VGG_N=2000 VGG_T=32 VGG_B=128
RN_N=96 RN_T=32 RN_B=32 RN_SEED=1
ONLY="" KEEP="" COMBINED=0 ENGINE_TP=0
THREADS=$(nproc 2>/dev/null || echo 4)
[ "$THREADS" -gt 16 ] && THREADS=16

is_count() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ]; }
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    -h|--help) usage; exit 0 ;;
    --combined) COMBINED=1; shift; continue ;;
    --engine-throughput) ENGINE_TP=1; shift; continue ;;
  esac
  [ $# -ge 2 ] || bad_args "missing value after $opt"
  val=$2
  shift 2
  case "$opt" in
    --build) BUILD=$val ;;
    --snnc) SNNC_BIN=$val ;;
    --python) PY=$val ;;
    --device) DEV=$val ;;
    --models) MODELS=$val ;;
    --vgg-model) VGG_MODEL=$val ;;
    --vgg-npy) VGG_NPY=$val ;;
    --fmnist) FMNIST=$val ;;
    --vgg-data) VGG_DATA=$val ;;
    --vgg-torch-data) VGG_TORCH_DATA=$val ;;
    --vgg-images) VGG_N=$val ;;
    --vgg-T) VGG_T=$val ;;
    --vgg-batch) VGG_B=$val ;;
    --resnet-images) RN_N=$val ;;
    --resnet-T) RN_T=$val ;;
    --resnet-batch) RN_B=$val ;;
    --resnet-seed) RN_SEED=$val ;;
    --only) ONLY=$val ;;
    --threads) THREADS=$val ;;
    --budget) BUDGET=$val ;;
    --work) WORK=$val ;;
    --keep) KEEP=$val ;;
    *) bad_args "unknown option $opt" ;;
  esac
done
case "$DEV" in cpu|cuda) ;; *) bad_args "--device must be cuda or cpu, got '$DEV'" ;; esac
case "$ONLY" in ""|vgg|resnet18) ;; *) bad_args "--only must be vgg or resnet18, got '$ONLY'" ;; esac
for v in VGG_N VGG_T VGG_B RN_N RN_T RN_B THREADS BUDGET; do
  is_count "${!v}" || bad_args "$v must be a positive integer, got '${!v}'"
done
[[ "$RN_SEED" =~ ^[0-9]+$ ]] || bad_args "--resnet-seed must be a non-negative integer, got '$RN_SEED'"

if [ -z "$BUILD" ]; then
  for b in "$ROOT/build-gpu" "$ROOT/build"; do [ -d "$b" ] && { BUILD=$b; break; }; done
  BUILD=${BUILD:-$ROOT/build}
fi
SNNC_BIN=${SNNC_BIN:-$BUILD/tools/snnc}
MAKE_MODEL=$BUILD/bench/make_bench_model
EXPORT_NPY=$BUILD/bench/export_npy
ENGINE=$BUILD/bench/engine_throughput
REF=$HERE/torch_reference.py
VGG_MODEL=${VGG_MODEL:-$MODELS/vgg_qcfs.snn.h5}
# PyTorch's copy of the VGG model: --vgg-npy as given; otherwise exported here and now from --vgg-model
# (so it cannot be stale), falling back to an export carried beside the model (M.snn.h5 -> M.npy/)
# when export_npy is missing, and to the .snn.h5 itself (needs h5py) when there is neither.
VGG_NPY_FALLBACK=${VGG_MODEL%.snn.h5}.npy
VGG_DATA=${VGG_DATA:-$FMNIST/t10k-images-idx3-ubyte.gz}
VGG_TORCH_DATA=${VGG_TORCH_DATA:-$VGG_DATA}

if [ -z "$WORK" ]; then
  WORK=$(mktemp -d /tmp/gpu_network_bench.XXXXXX) || { echo "gpu_network_bench.sh: mktemp failed" >&2; exit 2; }
  trap 'rm -rf "$WORK"' EXIT
  trap 'exit 143' TERM INT
else
  mkdir -p "$WORK" || bad_args "cannot create work folder $WORK"
fi
RAW=$WORK/raw
mkdir -p "$RAW"

# Python with the machine's own libraries (tests/gpu/run.sh puts carried ones first for snnc).
# (an array, not a function, so that `timeout` can run it)
PYRUN=("$PY")
[ -n "${SNN_GPU_ORIG_LD_LIBRARY_PATH+x}" ] && PYRUN=(env "LD_LIBRARY_PATH=$SNN_GPU_ORIG_LD_LIBRARY_PATH" "$PY")
py() { "${PYRUN[@]}" "$@"; }

HAVE_TIMEOUT=0
command -v timeout >/dev/null 2>&1 && HAVE_TIMEOUT=1
# seconds left in the budget, minus a reserve for the summaries
left() { echo $((BUDGET - ($(date +%s) - START_S) - 5)); }

# run NAME CAP cmd...: runs cmd with stdout -> RAW/NAME.out, stderr -> RAW/NAME.err, at most CAP seconds
# and never past the budget; RAW/NAME.rc gets the exit status (124: timed out; 125: no time left).
run() {
  local name=$1 cap=$2 t rc
  shift 2
  t=$(left)
  [ "$t" -lt "$cap" ] && cap=$t
  if [ "$cap" -lt 3 ]; then
    echo "skipped: the --budget of $BUDGET s is spent" >"$RAW/$name.err"
    : >"$RAW/$name.out"
    echo 125 >"$RAW/$name.rc"
    log "$name: skipped (budget spent)"
    return 125
  fi
  log "$name: $* (timeout ${cap}s)"
  local t0=$(date +%s)
  if [ $HAVE_TIMEOUT -eq 1 ]; then
    timeout --kill-after=5 "$cap" "$@" >"$RAW/$name.out" 2>"$RAW/$name.err"
  else
    "$@" >"$RAW/$name.out" 2>"$RAW/$name.err"
  fi
  rc=$?
  echo "$rc" >"$RAW/$name.rc"
  echo "$(($(date +%s) - t0))" >"$RAW/$name.wall"
  [ $rc -ne 0 ] && { log "$name: exit $rc"; tail -5 "$RAW/$name.err" >&2; }
  return $rc
}

# Fails a step before it runs (missing tool or file): the same files run() would leave.
fail_step() {
  local name=$1 msg=$2
  echo "$msg" >"$RAW/$name.err"
  : >"$RAW/$name.out"
  echo 127 >"$RAW/$name.rc"
  log "$name: $msg"
}

RESULTS=$WORK/results.jsonl
: >"$RESULTS"
ALL_OK=1

# summarize NAME INFO_JSON: one comparison object from RAW/NAME.{snnc,torch,...}.{out,err,rc,wall}
summarize() {
  local name=$1 info=$2 line
  line=$(py - "$RAW" "$name" "$info" <<'EOF'
import json, math, os, sys
raw, name, info = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

def side(step):
    def read(ext, default=""):
        try:
            with open(os.path.join(raw, f"{step}.{ext}")) as f:
                return f.read()
        except OSError:
            return default
    rc = read("rc", "").strip()
    rc = int(rc) if rc.lstrip("-").isdigit() else None
    err_tail = read("err")[-3000:].strip().splitlines()[-25:]
    res = {"ok": False, "exit_code": rc}
    if read("wall"):
        res["wall_seconds"] = int(read("wall").strip() or 0)
    if rc is None:
        res["error"] = "not run"
        return res, None
    if rc != 0:
        res["error"] = ("timed out" if rc in (124, 137) else "skipped (budget spent)" if rc == 125 else
                        "missing tool or input" if rc == 127 else f"exit status {rc}")
        res["stderr_tail"] = err_tail
        return res, None
    text = read("out")
    try:
        j = json.loads(text[text.index("{"):]) if "{" in text else None
    except ValueError as e:
        j = None
    if not isinstance(j, dict):
        res["error"] = "no JSON object on stdout"
        res["stdout_head"] = text[:500]
        res["stderr_tail"] = err_tail
        return res, None
    res["ok"] = True
    return res, j

out = {"comparison": name}
out.update(info)
steps = info.pop("_steps", None) or {}
out.pop("_steps", None)
for label, step in steps.items():  # preparation steps (model/data generation, exports)
    r, j = side(step)
    if not r["ok"] or label == "engine_throughput":
        out.setdefault("steps", {})[label] = r if not r["ok"] else dict(r, result=j)
s_res, s = side(name + ".snnc")
p_res, p = side(name + ".torch")
if s:
    s_res.update({k: s.get(k) for k in ("device", "method", "images", "timesteps", "seconds",
                                          "image_timesteps_per_second", "ann_accuracy")})
    s_res["accuracy_at_T"] = s["accuracy"][-1] if s.get("accuracy") else None
if p:
    p_res.update({k: p.get(k) for k in ("device", "torch_version", "cuda_version", "cudnn_version", "tf32",
                                          "images", "timesteps", "batch_size", "chunk_steps", "warmup_batches",
                                          "seconds", "image_timesteps_per_second", "ann_accuracy")})
    p_res["accuracy_at_T"] = p["accuracy"][-1] if p.get("accuracy") else None
out["snnc"] = s_res
out["pytorch"] = p_res
out["ratio_snnc_over_pytorch"] = None
if s and p:
    si, pi = s.get("image_timesteps_per_second"), p.get("image_timesteps_per_second")
    if si and pi:
        out["ratio_snnc_over_pytorch"] = si / pi
    sa, pa = s.get("accuracy") or [], p.get("accuracy") or []
    if sa and len(sa) == len(pa) and s.get("images") == p.get("images"):
        diff = [abs(a - b) for a, b in zip(sa, pa)]
        t = max(range(len(diff)), key=lambda i: diff[i])
        out["max_abs_accuracy_diff"] = diff[t]
        out["max_abs_accuracy_diff_at_t"] = t + 1
        out["mean_abs_accuracy_diff"] = sum(diff) / len(diff)
        out["one_image_in_percent"] = 100.0 / s["images"]
    else:
        out["accuracy_comparison"] = (f"not comparable: snnc {len(sa)} steps / {s.get('images')} images, "
                                      f"pytorch {len(pa)} steps / {p.get('images')} images")
    if s.get("ann_accuracy") is not None and p.get("ann_accuracy") is not None:
        out["ann_accuracy_diff"] = s["ann_accuracy"] - p["ann_accuracy"]
    sf, pf = s.get("firing_rate") or {}, p.get("firing_rate") or {}
    common = [k for k in sf if k in pf]
    if common:
        d = {k: sf[k] - pf[k] for k in common}
        worst = max(common, key=lambda k: abs(d[k]))
        out["firing_rate_max_abs_diff"] = abs(d[worst])
        out["firing_rate_max_abs_diff_layer"] = worst
        out["firing_rate_mean"] = {"snnc": sum(sf[k] for k in common) / len(common),
                                   "pytorch": sum(pf[k] for k in common) / len(common)}
out["ok"] = bool(s and p)
print(json.dumps(out))
EOF
)
  if [ -z "$line" ]; then
    line="{\"comparison\": \"$name\", \"ok\": false, \"error\": \"the summary step failed (python: $PY)\"}"
  fi
  echo "$line" >>"$RESULTS"
  [ $COMBINED -eq 0 ] && echo "$line"
  case "$line" in *'"ok": true}') ;; *) ALL_OK=0 ;; esac
}

SNNC_COMMON=(--json --quiet --device "$DEV" --threads "$THREADS")
TORCH_COMMON=(--device "$DEV" --threads "$THREADS")
log "device $DEV, budget ${BUDGET}s, build $BUILD, python $PY, work $WORK"

# ------------------------------------------------------------------------------------------------------
# (a) the examples VGG model on Fashion-MNIST
# ------------------------------------------------------------------------------------------------------
if [ -z "$ONLY" ] || [ "$ONLY" = vgg ]; then
  steps='{}'
  torch_model=$VGG_NPY
  if [ ! -f "$VGG_MODEL" ]; then
    fail_step vgg.snnc "model not found: $VGG_MODEL (convert examples/models/vgg_qcfs.pt with snnc convert, or --vgg-model)"
    fail_step vgg.torch "model not found: $VGG_MODEL"
  else
    if [ -z "$torch_model" ]; then
      torch_model=$WORK/vgg_npy
      if [ -x "$EXPORT_NPY" ]; then
        run vgg.export 30 "$EXPORT_NPY" "$VGG_MODEL" "$torch_model"
      else
        fail_step vgg.export "export_npy not found at $EXPORT_NPY"
      fi
      steps='{"export_npy": "vgg.export"}'
      if [ ! -f "$torch_model/manifest.json" ]; then
        if [ -f "$VGG_NPY_FALLBACK/manifest.json" ]; then torch_model=$VGG_NPY_FALLBACK
        else torch_model=$VGG_MODEL; fi
        log "vgg: no fresh export; PyTorch reads $torch_model"
      fi
    fi
    if [ -x "$SNNC_BIN" ]; then
      run vgg.snnc 45 "$SNNC_BIN" sweep "$VGG_MODEL" --data "$VGG_DATA" --T "$VGG_T" --limit "$VGG_N" \
        --batch-size "$VGG_B" "${SNNC_COMMON[@]}"
    else
      fail_step vgg.snnc "snnc not found at $SNNC_BIN"
    fi
    run vgg.torch 45 "${PYRUN[@]}" "$REF" "$torch_model" --data "$VGG_TORCH_DATA" --T "$VGG_T" --limit "$VGG_N" \
      --batch-size "$VGG_B" "${TORCH_COMMON[@]}"
  fi
  summarize vgg "$(py -c 'import json, sys; print(json.dumps({"network": "examples VGG (vgg_qcfs)", "model": sys.argv[1], "pytorch_model": sys.argv[2], "data": sys.argv[3], "pytorch_data": sys.argv[4], "labels": "Fashion-MNIST test labels", "images_requested": int(sys.argv[5]), "timesteps": int(sys.argv[6]), "batch_size": int(sys.argv[7]), "device_requested": sys.argv[8], "_steps": json.loads(sys.argv[9])}))' \
    "$VGG_MODEL" "$torch_model" "$VGG_DATA" "$VGG_TORCH_DATA" "$VGG_N" "$VGG_T" "$VGG_B" "$DEV" "$steps")"
fi

# ------------------------------------------------------------------------------------------------------
# (b) ResNet-18, random weights, 3x224x224
# ------------------------------------------------------------------------------------------------------
if [ -z "$ONLY" ] || [ "$ONLY" = resnet18 ]; then
  m=$WORK/resnet18.snn.h5 d=$WORK/resnet18_data.h5 n=$WORK/resnet18_npy
  steps='{"make_bench_model": "resnet18.make", "export_npy": "resnet18.export"}'
  if [ -x "$MAKE_MODEL" ] && [ -x "$EXPORT_NPY" ]; then
    if run resnet18.make 45 "$MAKE_MODEL" --net resnet18 -o "$m" --seed "$RN_SEED" --images "$RN_N" \
         --data-out "$d" --threads "$THREADS"; then
      run resnet18.export 30 "$EXPORT_NPY" "$m" "$n" --data "$d"
    fi
  else
    fail_step resnet18.make "make_bench_model or export_npy not found under $BUILD/bench"
  fi
  if [ -f "$m" ] && [ -f "$d" ]; then
    if [ -x "$SNNC_BIN" ]; then
      run resnet18.snnc 60 "$SNNC_BIN" sweep "$m" --data "$d" --T "$RN_T" --limit "$RN_N" --batch-size "$RN_B" \
        "${SNNC_COMMON[@]}"
    else
      fail_step resnet18.snnc "snnc not found at $SNNC_BIN"
    fi
    if [ -f "$n/manifest.json" ] && [ -f "$n/images.npy" ]; then
      run resnet18.torch 60 "${PYRUN[@]}" "$REF" "$n" --data "npy:$n" --T "$RN_T" --limit "$RN_N" --batch-size "$RN_B" \
        "${TORCH_COMMON[@]}"
    else
      fail_step resnet18.torch "no npy export of the ResNet-18 model and images (export_npy failed)"
    fi
    if [ $ENGINE_TP -eq 1 ]; then
      steps='{"make_bench_model": "resnet18.make", "export_npy": "resnet18.export", "engine_throughput": "resnet18.engine"}'
      if [ -x "$ENGINE" ]; then
        run resnet18.engine 45 "$ENGINE" --device "$DEV" --net resnet18 --T "$RN_T" --batch "$RN_B" --batches 2 \
          --threads "$THREADS" --seed "$RN_SEED"
      else
        fail_step resnet18.engine "engine_throughput not found at $ENGINE"
      fi
    fi
  else
    fail_step resnet18.snnc "no model/data: make_bench_model failed"
    fail_step resnet18.torch "no model/data: make_bench_model failed"
  fi
  summarize resnet18 "$(py -c 'import json, sys; print(json.dumps({"network": "ResNet-18 (torchvision layout, BN folded), random He weights, seed " + sys.argv[1], "input": [3, 224, 224], "model": "make_bench_model --net resnet18 --seed " + sys.argv[1], "data": "uniform [0,1) random images", "labels": "the ANN view'"'"'s prediction (accuracy = agreement with the CNN)", "thresholds": "99.9th percentile of each layer'"'"'s positive ANN activations on 8 random images", "images_requested": int(sys.argv[2]), "timesteps": int(sys.argv[3]), "batch_size": int(sys.argv[4]), "device_requested": sys.argv[5], "_steps": json.loads(sys.argv[6])}))' \
    "$RN_SEED" "$RN_N" "$RN_T" "$RN_B" "$DEV" "$steps")"
fi

if [ $COMBINED -eq 1 ]; then
  py - "$RESULTS" "$DEV" "$(($(date +%s) - START_S))" <<'EOF'
import json, sys
rows = []
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if line:
            try:
                rows.append(json.loads(line))
            except ValueError:
                rows.append({"ok": False, "error": "unparsable summary line", "line": line[:500]})
print(json.dumps({"benchmark": "gpu_network_bench", "device_requested": sys.argv[2],
                  "wall_seconds": int(sys.argv[3]), "comparisons": rows}, indent=1))
EOF
fi
if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp -r "$RAW" "$RESULTS" "$KEEP"/ 2>/dev/null; fi
log "done in $(($(date +%s) - START_S)) s"
[ $ALL_OK -eq 1 ] && exit 0 || exit 1
