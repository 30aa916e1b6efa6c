#!/usr/bin/env bash
# `snnc convert` as users run it. Usage: cli_convert_test.sh CASE SNNC FIXTURES_DIR WORK_DIR
#   fixture            QCFS fixture (no data needed) -> exit 0, the file exists, `snnc info` reads it;
#                      a ReLU ResNet with a small HDF5 calibration set (when h5py is there)
#   unsupported        unsupported_sigmoid.pt -> exit != 0, names sigmoid, nothing left in the output dir
#   bad_mean           --mean/--std with the wrong number of values -> exit != 0, no output
#   no_data            ReLU model without --data -> exit != 0, says to pass --data
#   unfaithful         a model whose ANN view differs from LibTorch -> exit != 0, names the layer that
#                      departs, nothing written (needs torch to make the model: the project's venv; exit 77 without)
#   qcfs_flip          a QCFS model whose folded batch norm moves pre-activations across a level -> converts
#                      (the check is per layer), and the move shows in the end-to-end figures;
#                      --no-check skips the check and says so in the provenance
#   model_zoo          a representative subset of the torchvision classifiers (small widths: plain, batch-
#                      normed, residual, dense, inception, channel-shuffle, depthwise, U-Net) in every format
#                      (.pt2, ONNX, TorchScript script/trace): converts, matches the format's runtime layer by
#                      layer, argmax equal, runs as an SNN; SiLU and Hardswish models refused naming the op
#                      (bench/model_zoo.py; the whole zoo is a bench; exit 77 without torchvision)
#   fmnist_end_to_end  fmnist_tiny.pt on Fashion-MNIST: the converted ANN view's test accuracy equals
#                      PyTorch's (fmnist_tiny.json) within 0.1 pt; exit 77 (skip) without the dataset
#   nested_loops       nested_loops.pt / nested_loops_count.pt (two nested 100000-trip loops) -> exit 1 naming
#                      the model, "nested loops?" and the loop's line, nothing written; the time bound is the
#                      CTest TIMEOUT of this case (the import must give up within seconds, not hang)
#   no_torch           snnc built without LibTorch: TorchScript is refused saying why; .pt2 and ONNX convert
set -u
case_name=$1
snnc=$2
fixtures=$3
work=$4
# The Python with torch: $SNN_PYTHON, else the project's venv (.ci/install-deps), else Debian's python3.
repo=$(cd "$fixtures/../.." && pwd)
if [ -n "${SNN_PYTHON:-}" ]; then PY=$SNN_PYTHON
elif [ -x "$repo/.venv/bin/python" ]; then PY=$repo/.venv/bin/python
else PY=/usr/bin/python3; fi

rm -rf "$work"
mkdir -p "$work/out"
out="$work/out"

fail() {
  echo "FAIL [$case_name]: $*" >&2
  for f in "$work"/*.txt; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  exit 1
}

# JSON field from a file: json_get FILE 'expression on d'
json_get() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

expect_failure_without_output() {  # expect_failure_without_output RC STDERR_FILE WORD
  [ "$1" -ne 0 ] || fail "convert succeeded but should have failed"
  grep -qi -- "$3" "$2" || fail "stderr does not mention '$3'"
  [ -z "$(ls -A "$out")" ] || fail "files left in the output directory: $(ls -A "$out")"
}

have_info() { "$snnc" info --help >/dev/null 2>&1; }

case "$case_name" in
fixture)
  "$snnc" convert "$fixtures/qcfs_scripted.pt" -o "$out/qcfs.snn.h5" --input-shape 1,12,12 --json \
    >"$work/stdout.txt" 2>"$work/stderr.txt" || fail "convert failed"
  [ -f "$out/qcfs.snn.h5" ] || fail "no output file"
  [ "$(json_get "$work/stdout.txt" "d['faithfulness']['passed']")" = True ] || fail "faithfulness not reported"
  [ "$(json_get "$work/stdout.txt" "[t['levels'] for t in d['thresholds']]")" = "[4, 8, 4, 8]" ] || fail "QCFS levels"
  [ "$(json_get "$work/stdout.txt" "[t['threshold'][0] for t in d['thresholds']]")" = "[1.5, 2.0, 2.5, 3.0]" ] ||
    fail "QCFS thresholds"
  if have_info; then
    "$snnc" info "$out/qcfs.snn.h5" >"$work/info.txt" 2>&1 || fail "snnc info failed on the converted file"
    grep -q "qcfs" "$work/info.txt" || fail "snnc info does not show the QCFS layers"
    "$snnc" info "$out/qcfs.snn.h5" --json >"$work/info.json" 2>&1 || fail "snnc info --json failed"
    [ "$(json_get "$work/info.json" "d['metadata']['source_model']")" = "$fixtures/qcfs_scripted.pt" ] ||
      fail "provenance: source_model"
    json_get "$work/info.json" "d['metadata']['command_line']" | grep -q "convert" || fail "provenance: command line"
  else
    echo "snnc info not available: skipped reading the file back"
  fi
  # A ReLU network needs calibration data: a small HDF5 set of random images (needs h5py).
  if "$PY" -c "import h5py, numpy" 2>/dev/null; then
    "$PY" - "$work/calib.h5" <<'EOF' || fail "cannot write the HDF5 calibration set"
import sys, h5py, numpy as np
rng = np.random.default_rng(0)
with h5py.File(sys.argv[1], "w") as f:
    f["images"] = rng.standard_normal((64, 1, 12, 12)).astype(np.float32)
    f["labels"] = (np.arange(64) % 10).astype(np.int64)
EOF
    "$snnc" convert "$fixtures/resnet_scripted.pt" -o "$out/resnet.snn.h5" --data "$work/calib.h5" \
      --channelwise --norm max --json >"$work/resnet.txt" 2>"$work/stderr.txt" || fail "convert of the ResNet failed"
    [ "$(json_get "$work/resnet.txt" "d['batchnorms_folded']")" = 6 ] || fail "ResNet: BN folded"
    [ "$(json_get "$work/resnet.txt" "all(len(t['threshold']) > 1 for t in d['thresholds'])")" = True ] ||
      fail "ResNet: per-channel thresholds"
    "$snnc" convert "$fixtures/maxpool_scripted.pt" -o "$out/maxpool.snn.h5" --data "$work/calib.h5" \
      >"$work/maxpool.txt" 2>"$work/stderr.txt" || fail "convert of the max-pool model failed"
    grep -q "largest running input sum" "$work/maxpool.txt" || fail "max pooling handling not reported"
  else
    echo "h5py not available: skipped the ReLU models with calibration data"
  fi
  ;;
unsupported)
  "$snnc" convert "$fixtures/unsupported_sigmoid.pt" -o "$out/model.snn.h5" --input-shape 1,12,12 \
    >"$work/stdout.txt" 2>"$work/stderr.txt"
  expect_failure_without_output $? "$work/stderr.txt" sigmoid
  ;;
bad_mean)
  "$snnc" convert "$fixtures/qcfs_scripted.pt" -o "$out/model.snn.h5" --input-shape 1,12,12 \
    --mean 0.1,0.2 --std 0.3,0.3 >"$work/stdout.txt" 2>"$work/stderr.txt"
  expect_failure_without_output $? "$work/stderr.txt" "--mean"
  ;;
no_data)
  "$snnc" convert "$fixtures/seq_scripted.pt" -o "$out/model.snn.h5" --input-shape 1,12,12 \
    >"$work/stdout.txt" 2>"$work/stderr.txt"
  expect_failure_without_output $? "$work/stderr.txt" "--data"
  ;;
fmnist_end_to_end)
  if [ ! -d /usr/share/datasets/fashion-mnist ]; then
    echo "Fashion-MNIST not installed (/usr/share/datasets/fashion-mnist): skipped"
    exit 77
  fi
  meta="$fixtures/fmnist_tiny.json"
  mean=$(json_get "$meta" "','.join(str(v) for v in d['mean'])")
  std=$(json_get "$meta" "','.join(str(v) for v in d['std'])")
  "$snnc" convert "$fixtures/fmnist_tiny.pt" -o "$out/tiny.snn.h5" --mean "$mean" --std "$std" \
    --data fashion-mnist:test >"$work/convert.txt" 2>"$work/stderr.txt" || fail "convert failed"
  "$snnc" eval "$out/tiny.snn.h5" --data fashion-mnist:test --ann --json >"$work/eval.json" 2>"$work/eval_err.txt" ||
    fail "snnc eval failed"
  "$PY" - "$work/eval.json" "$meta" <<'EOF' || fail "ANN-view accuracy differs from PyTorch's"
import json, sys
got = json.load(open(sys.argv[1]))["ann_accuracy"]
want = json.load(open(sys.argv[2]))["test_accuracy"]
print(f"ANN view accuracy {got:.2f} %, PyTorch {want:.2f} %")
sys.exit(0 if abs(got - want) <= 0.1 else 1)
EOF
  ;;
unfaithful)
  # A module named QCFS whose forward is not QCFS: snnc follows the naming convention, so the ANN view
  # differs from LibTorch and the faithfulness check must refuse to write anything.
  "$PY" -c "import torch" 2>/dev/null || { echo "torch not available to $PY: skipped"; exit 77; }
  # torch.jit.script reads the module's source, so the script must be a file.
  cat >"$work/make_fake_qcfs.py" <<'EOF'
import sys, torch, torch.nn as nn
class QCFS(nn.Module):
    def __init__(self):
        super().__init__()
        self.thresh = nn.Parameter(torch.tensor(2.0))
        self.L = 4
    def forward(self, x):
        return torch.clamp(x, 0, 1) * self.thresh   # not QCFS: no quantisation, different scale
torch.manual_seed(0)
m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), QCFS(), nn.Flatten(), nn.Linear(4 * 12 * 12, 10)).eval()
torch.jit.script(m).save(sys.argv[1])
EOF
  "$PY" "$work/make_fake_qcfs.py" "$work/fake_qcfs.pt" >"$work/python.txt" 2>&1 || fail "cannot write the model"
  "$snnc" convert "$work/fake_qcfs.pt" -o "$out/model.snn.h5" --input-shape 1,12,12 \
    >"$work/stdout.txt" 2>"$work/stderr.txt"
  expect_failure_without_output $? "$work/stderr.txt" "faithfulness check failed"
  grep -q "layer '1' (neuron) departs" "$work/stderr.txt" || fail "the failing layer is not named"
  ;;
qcfs_flip)
  "$PY" -c "import torch" 2>/dev/null || { echo "torch not available to $PY: skipped"; exit 77; }
  cat >"$work/make_flip.py" <<'EOF'
import sys, torch, torch.nn as nn
class QCFS(nn.Module):
    def __init__(self):
        super().__init__()
        self.thresh = nn.Parameter(torch.tensor(1.0))
        self.L = 4
    def forward(self, x):
        x = torch.clamp(x / self.thresh, 0, 1)
        return torch.floor(x * self.L + 0.5) / self.L * self.thresh
torch.manual_seed(0)
conv, bn = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
with torch.no_grad():
    # Pre-BN values near 4000 (float spacing 2.4e-4) that BN shifts back to [-5, 5]: PyTorch rounds at 4000,
    # the folded layer does not, so some values land on the other side of a QCFS step.
    conv.bias.fill_(4000.0)
    bn.running_mean.fill_(4000.0)
    bn.running_var.fill_(0.25)
m = nn.Sequential(conv, bn, QCFS(), nn.Conv2d(16, 8, 3, padding=1), QCFS(), nn.Flatten(),
                  nn.Linear(8 * 16 * 16, 10)).eval()
torch.jit.script(m).save(sys.argv[1])
EOF
  "$PY" "$work/make_flip.py" "$work/flip.pt" >"$work/python.txt" 2>&1 || fail "cannot write the model"
  "$snnc" convert "$work/flip.pt" -o "$out/flip.snn.h5" --input-shape 3,16,16 --json \
    >"$work/stdout.txt" 2>"$work/stderr.txt" || fail "convert refused a faithful QCFS import"
  [ "$(json_get "$work/stdout.txt" "d['faithfulness']['passed']")" = True ] || fail "not reported as passed"
  [ "$(json_get "$work/stdout.txt" "d['faithfulness']['worst_drift_moved_fraction'] > 0")" = True ] ||
    fail "no QCFS level moved: the model does not test what it should"
  [ "$(json_get "$work/stdout.txt" "d['faithfulness']['output_max_abs_diff'] > 1e-4")" = True ] ||
    fail "the logits moved less than the old absolute yardstick: the model does not test what it should"
  "$snnc" convert "$work/flip.pt" -o "$out/unchecked.snn.h5" --input-shape 3,16,16 --no-check \
    >"$work/stdout2.txt" 2>"$work/stderr2.txt" || fail "--no-check failed"
  "$snnc" info "$out/unchecked.snn.h5" --json >"$work/info.json" 2>&1 || fail "snnc info failed"
  [ "$(json_get "$work/info.json" "d['metadata']['faithfulness']")" = "not checked (--no-check)" ] ||
    fail "--no-check is not recorded in the provenance"
  "$snnc" info "$out/flip.snn.h5" >"$work/info.txt" 2>&1 || fail "snnc info failed"
  grep -q "faithfulness .*layers checked against LibTorch" "$work/info.txt" || fail "info does not show the check"
  ;;
model_zoo)
  "$PY" -c "import torchvision, h5py" 2>/dev/null || { echo "torchvision or h5py not available: skipped"; exit 77; }
  "$PY" -c "import onnx, onnxruntime" 2>/dev/null || { echo "onnx or onnxruntime not available: skipped"; exit 77; }
  "$PY" "$(dirname "$0")/../../bench/model_zoo.py" --snnc "$snnc" --work "$work/zoo" --variants pt2,onnx,scripted,traced \
    --models vgg11_bn,resnet18,densenet121,googlenet,shufflenet_v2_x0_5,mobilenet_v2,unet_classifier,efficientnet_b0,mobilenet_v3_small \
    >"$work/zoo.txt" 2>"$work/zoo_err.txt" ||
    fail "model zoo: $(tail -1 "$work/zoo.txt")"
  ;;
nested_loops)
  for model in nested_loops nested_loops_count; do
    start=$(date +%s%N)
    "$snnc" convert "$fixtures/$model.pt" -o "$out/$model.snn.h5" --input-shape 1,12,12 \
      >"$work/stdout.txt" 2>"$work/stderr.txt"
    rc=$?
    echo "$model: exit $rc after $(( ($(date +%s%N) - start) / 1000000 )) ms: $(head -c 600 "$work/stderr.txt")"
    [ "$rc" -eq 1 ] || fail "$model: exit $rc, expected 1"
    expect_failure_without_output "$rc" "$work/stderr.txt" "operations (nested loops?)"
    grep -q "$model.pt" "$work/stderr.txt" || fail "$model: the message does not name the model"
    grep -q "range(100000)" "$work/stderr.txt" || fail "$model: the message does not name the loop"
  done
  ;;
no_torch)
  "$snnc" convert "$fixtures/seq_scripted.pt" -o "$out/model.snn.h5" >"$work/stdout.txt" 2>"$work/stderr.txt"
  expect_failure_without_output $? "$work/stderr.txt" "without LibTorch"
  # .pt2 and ONNX need no LibTorch (QCFS models: no data; the input shape comes from the file).
  for model in pt2/qcfs.pt2 onnx/qcfs_dynamo.onnx; do
    "$snnc" convert "$fixtures/$model" -o "$out/native.snn.h5" --quiet >"$work/stdout.txt" 2>"$work/stderr.txt" ||
      fail "$model does not convert without LibTorch"
    [ -f "$out/native.snn.h5" ] || fail "$model: no output"
    rm -f "$out/native.snn.h5"
  done
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "ok [$case_name]"
