#!/usr/bin/env bash
# Strong scaling of a data-parallel sweep on this machine: one process with P threads against P processes
# (mpirun) with one thread each, same model, images, T and batch size. Prints one JSON object: each
# side's image-timesteps per second (simulation wall time, from rank 0), the speed-up, and whether the
# two runs' numbers (accuracy per t, firing rates, synaptic operations) are identical.
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
"$SNNC" "${args[@]}" --threads "$P" > "$tmp/one.json"
"$MPIRUN" --oversubscribe --bind-to core -np "$P" "$SNNC" "${args[@]}" --threads 1 > "$tmp/many.json"
/usr/bin/python3 - "$tmp/one.json" "$tmp/many.json" "$P" "$T" "$LIMIT" "$BATCH" "$MODEL" <<'PY'
import json, sys
one, many = (json.load(open(p)) for p in sys.argv[1:3])
P, T, limit, batch, model = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
same = all(one[k] == many[k] for k in ("accuracy", "firing_rate", "synaptic_ops_per_image", "dense_macs_per_image"))
print(json.dumps({
    "model": model, "T": T, "images": one["images"], "batch": batch,
    "one_process": {"threads": P, "image_timesteps_per_second": one["image_timesteps_per_second"]},
    "processes": {"count": P, "threads_each": 1, "image_timesteps_per_second": many["image_timesteps_per_second"]},
    "speedup_processes_over_threads": many["image_timesteps_per_second"] / one["image_timesteps_per_second"],
    "identical_numbers": same}, indent=2))
PY
