#!/usr/bin/env python3
"""CPU throughput alone, SpikingJelly 2.0's converted SNN against `snnc sweep` (issue 33, part 1), for a
quiet machine: the same models, conversions and timing as spikingjelly_vs_snnc.py's throughput step
(SpikingJelly's 'max' SNN in its faster step mode, snnc's matched 'max' conversion: binary spikes, reset by
subtraction, v_init 0), the same images, batch, T and threads, A/B interleaved rounds, medians. Writes
one JSON (default bench/peers/throughput.json); progress on stderr.

    .venv/bin/python bench/peers/throughput.py --models vgg,resnet18 [--snnc build/tools/snnc]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spikingjelly_vs_snnc as peers  # noqa: E402


def measure(args, name, spec):
    """One model: the SNNs on both sides, then `--repeats` interleaved rounds."""
    n = min(args.images, len(spec["x_test"]))
    T, B = args.T, min(args.batch, n)
    x = spec["x_test"][:n]
    snn = peers.sj_convert(spec["sj_ann"], spec["x_cal"], "max", args.sj_calib_batch)
    speed = {}
    for mode in ("s", "m"):  # SpikingJelly's faster documented step mode on this model
        peers.sj_run(snn, x[:B], 2, B, mode)
        t0 = time.time()
        peers.sj_run(snn, x[:B], T, B, mode)
        speed[mode] = B * T / (time.time() - t0)
    mode = max(speed, key=speed.get)
    model = os.path.join(args.work, f"{name}.matched-max.snn.h5")
    if not os.path.exists(model):
        peers.snnc(args, "convert", spec["snnc_matched_file"], "-o", model, "--data", spec["calib_data"],
                   "--limit", str(len(spec["x_cal"])), "--mean", *spec["mean"], "--std", *spec["std"],
                   "--threads", str(args.threads), "--reset", "subtract", "--spikes", "binary", "--v-init", "0",
                   "--norm", "max")
    peers.snnc_sweep(args, model, spec["test_data"], T, B, B)  # warm-up (page cache)
    runs = {"spikingjelly": [], "snnc": []}
    for r in range(args.repeats):
        t0 = time.time()
        peers.sj_run(snn, x, T, B, mode)
        runs["spikingjelly"].append(n * T / (time.time() - t0))
        s, _ = peers.snnc_sweep(args, model, spec["test_data"], T, n, B)
        runs["snnc"].append(s["image_timesteps_per_second"])
        peers.log(f"[{name}] round {r + 1}: SpikingJelly {runs['spikingjelly'][-1]:.0f}, snnc {runs['snnc'][-1]:.0f}")
    med = {k: float(np.median(v)) for k, v in runs.items()}
    return {"images": n, "batch": B, "T": T, "threads": args.threads, "repeats": args.repeats,
            "spikingjelly_step_mode": mode, "step_mode_probe": {k: round(v, 1) for k, v in speed.items()},
            "image_timesteps_per_s": {k: [round(v, 1) for v in vs] for k, vs in runs.items()},
            "median": {k: round(v, 1) for k, v in med.items()},
            "ratio": round(med["snnc"] / med["spikingjelly"], 2),
            "what": "SpikingJelly: its 'max' SNN, all batches incl. reset_net, torch.set_num_threads; snnc: "
                    "sweep --threads --batch-size, its JSON image_timesteps_per_second (simulation of every "
                    "batch; the ANN pass and file loading excluded)"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--snnc", default=os.path.join(peers.ROOT, "build/tools/snnc"))
    p.add_argument("--out", default=os.path.join(peers.ROOT, "bench/peers/throughput.json"))
    p.add_argument("--work", default=os.path.join(peers.ROOT, "bench/peers/work"))
    p.add_argument("--models", default="vgg,resnet18")
    p.add_argument("--T", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--calib-limit", type=int, default=500)
    p.add_argument("--sj-calib-batch", type=int, default=100)
    p.add_argument("--r18-steps", type=int, default=100)
    p.add_argument("--r18-batch", type=int, default=64)
    args = p.parse_args()
    args.snnc = os.path.abspath(args.snnc)
    args.test_limit, args.test_limit_for = args.images, {}
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    want = args.models.split(",")
    specs = peers.specs(args, want)
    res = {"benchmark": "spikingjelly_vs_snnc throughput", "command": " ".join(sys.argv),
           "machine": {"cores": os.cpu_count(), "load_before": os.getloadavg()}, "models": {}}
    for name in want:
        res["models"][name] = measure(args, name, specs[name])
    res["machine"]["load_after"] = os.getloadavg()
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
