#!/usr/bin/env bash
# Strong scaling of a data-parallel sweep on this machine: one process with one thread, one process with P
# threads, and P processes (mpirun) with one thread each, on the same model, images, T and batch size.
# Prints one JSON object: each run's image-timesteps per second (simulation wall time, from rank 0), the
# speed-ups over one thread and the parallel efficiency of the processes, and whether the runs' numbers
# (accuracy per t, firing rates, synaptic operations) are identical.
#
#   bench/mpi_scaling.sh MODEL.snn.h5 [T=32] [LIMIT=2000] [P=2]
#
# Environment: SNNC (default build/tools/snnc), MPIRUN (default mpirun), BATCH (default 128),
# DATA (default fashion-mnist:test). As root, OpenMPI needs OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1 (set here).
set -euo pipefail
MODEL=${1:?usage: bench/mpi_scaling.sh MODEL.snn.h5 [T] [LIMIT] [P]}
T=${2:-32}; LIMIT=${3:-2000}; P=${4:-2}
SNNC=${SNNC:-build/tools/snnc}; MPIRUN=${MPIRUN:-mpirun}; BATCH=${BATCH:-128}; DATA=${DATA:-fashion-mnist:test}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
args=(sweep "$MODEL" --data "$DATA" --limit "$LIMIT" --T "$T" --batch-size "$BATCH" --json -q)
"$SNNC" "${args[@]}" --threads 1 > "$tmp/serial.json"
"$SNNC" "${args[@]}" --threads "$P" > "$tmp/one.json"
"$MPIRUN" --oversubscribe --bind-to core -np "$P" "$SNNC" "${args[@]}" --threads 1 > "$tmp/many.json"
/usr/bin/python3 - "$tmp/serial.json" "$tmp/one.json" "$tmp/many.json" "$P" "$T" "$BATCH" "$MODEL" <<'PY'
import json, sys
serial, one, many = (json.load(open(p)) for p in sys.argv[1:4])
P, T, batch, model = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
keys = ("accuracy", "firing_rate", "synaptic_ops_per_image", "dense_macs_per_image")
rate = lambda j: j["image_timesteps_per_second"]
print(json.dumps({
    "model": model, "T": T, "images": one["images"], "batch": batch,
    "one_thread": {"image_timesteps_per_second": rate(serial)},
    "one_process": {"threads": P, "image_timesteps_per_second": rate(one)},
    "processes": {"count": P, "threads_each": 1, "image_timesteps_per_second": rate(many)},
    "speedup_threads": rate(one) / rate(serial),
    "speedup_processes": rate(many) / rate(serial),
    "process_efficiency": rate(many) / rate(serial) / P,
    "processes_over_threads": rate(many) / rate(one),
    "identical_numbers": all(serial[k] == one[k] == many[k] for k in keys)}, indent=2))
PY
