#!/usr/bin/env python3
"""End-to-end checks of the snnc CLI as a user runs it: outputs, JSON keys, sweep.h5 contents, error
messages and exit codes, no half-written files, and the notebook executed headless on a real sweep.
Exits 77 (skipped) when Debian's Fashion-MNIST is not installed."""
import argparse, json, os, shutil, subprocess, sys

FMNIST = "/usr/share/datasets/fashion-mnist"
failures = []


def run(cmd, expect_ok=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if expect_ok and p.returncode != 0:
        raise SystemExit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def leftovers(d):
    return [f for f in os.listdir(d) if ".tmp-" in f]


def signed_spike_checks(snnc, a, vgg, signed):
    """Signed spikes and "levels" on the examples QCFS VGG (L = 8): its CNN at t = T for T >= L."""
    check("spikes=signed" in run([snnc, "info", signed]).stdout, "info shows signed spikes")
    levels16 = os.path.join(a.work, "vgg_levels16.snn.h5")
    run([snnc, "calibrate", signed, "-o", levels16, "--method", "levels", "--T", "16", "--quiet"])
    check("snn_theta=2*theta" in run([snnc, "info", levels16]).stdout and
          "(max 8)" in run([snnc, "info", levels16]).stdout, "levels for T = 16: threshold 2θ, at most 8 spikes")
    lv = json.loads(run([snnc, "sweep", levels16, "--data", "fashion-mnist:test", "--T", "16", "--limit", "500",
                         "--json"]).stdout)
    plain = json.loads(run([snnc, "sweep", signed, "--data", "fashion-mnist:test", "--T", "16", "--limit", "500",
                            "--json"]).stdout)
    check(abs(lv["accuracy"][-1] - lv["ann_accuracy"]) <= 0.6,
          f"levels: SNN at t = T equals its CNN within 3 of 500 images ({lv['accuracy'][-1]:.1f} vs {lv['ann_accuracy']:.1f} %)")
    check(lv["accuracy"][-1] > plain["accuracy"][-1],
          f"levels beats the unspread network at t = 16 ({lv['accuracy'][-1]:.1f} vs {plain['accuracy'][-1]:.1f} %)")
    p = run([snnc, "export", signed, "-o", os.path.join(a.work, "signed.nir")], expect_ok=False)
    check(p.returncode == 1 and "signed spikes" in p.stderr, "NIR export refuses signed spikes, saying why")
    p = run([snnc, "convert", vgg, "-o", os.path.join(a.work, "bad.snn.h5"), "--input-shape", "1,28,28",
             "--spikes", "signed", "--reset", "zero"], expect_ok=False)
    check(p.returncode == 1 and "--spikes signed needs reset by subtraction" in p.stderr,
          "signed spikes with reset to zero is refused")
    # The default: signed with reset by subtraction, binary with reset to zero.
    dflt = os.path.join(a.work, "vgg_default.snn.h5")
    run([snnc, "convert", vgg, "-o", dflt, "--input-shape", "1,28,28", "--quiet"])
    check("spikes=signed" in run([snnc, "info", dflt]).stdout, "convert's default spikes are signed")
    zero = os.path.join(a.work, "vgg_zero.snn.h5")
    run([snnc, "convert", vgg, "-o", zero, "--input-shape", "1,28,28", "--reset", "zero", "--quiet"])
    check("spikes=signed" not in run([snnc, "info", zero]).stdout, "with --reset zero the default spikes are binary")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--snnc", required=True)
    ap.add_argument("--api-example", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--repo", required=True)
    a = ap.parse_args()
    if not os.path.isdir(FMNIST):
        print("skipped: Fashion-MNIST not installed (Debian package dataset-fashion-mnist)")
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    snnc = a.snnc
    model = os.path.join(a.work, "hand_built.snn.h5")
    run([a.api_example, model, "8"])

    # info
    p = run([snnc, "info", model])
    check("templates" in p.stdout and "neuron" in p.stdout and "theta=" in p.stdout, "info lists layers and thresholds")
    info = json.loads(run([snnc, "info", model, "--json"]).stdout)
    check([l["type"] for l in info["layers"]] == ["flatten", "linear", "neuron", "linear"], "info --json layer types")

    # sweep --json: the keys the issue names, one accuracy per step
    T = 12
    j = json.loads(run([snnc, "sweep", model, "--data", "fashion-mnist:test", "--T", str(T), "--limit", "500",
                        "--json", "--device", "cpu"]).stdout)
    for key in ("ann_accuracy", "accuracy", "images", "timesteps", "seconds", "firing_rate"):
        check(key in j, f"sweep --json has '{key}'")
    check(len(j["accuracy"]) == T and j["images"] == 500 and j["timesteps"] == T, "sweep --json sizes")
    check(j["accuracy"][-1] > 40 and j["ann_accuracy"] > 60, f"hand-built model is a real classifier "
          f"(ANN {j['ann_accuracy']:.1f} %, SNN@{T} {j['accuracy'][-1]:.1f} %)")
    check(list(j["firing_rate"]) == ["if"] and 0 < j["firing_rate"]["if"] < 1, "firing rate per neuron layer")
    # One run of T gives the shorter runs: T=5 alone equals the first 5 entries.
    j5 = json.loads(run([snnc, "sweep", model, "--data", "fashion-mnist:test", "--T", "5", "--limit", "500",
                         "--json"]).stdout)
    check(j5["accuracy"] == j["accuracy"][:5], "anytime readout: sweep T=5 == first 5 of T=12")
    # Readable table
    p = run([snnc, "sweep", model, "--data", "fashion-mnist:test", "--T", "8", "--limit", "200"])
    check("ANN" in p.stdout and "firing rate" in p.stdout and "\x1b" not in p.stdout, "sweep table, no terminal codes")

    # eval --ann
    e = json.loads(run([snnc, "eval", model, "--data", "fashion-mnist:test", "--ann", "--json", "--limit", "500"]).stdout)
    check(abs(e["ann_accuracy"] - j["ann_accuracy"]) < 1e-9, "eval --ann equals the sweep's ANN accuracy")

    # calibrate + sweep --compare -> sweep.h5 -> notebook
    cal = os.path.join(a.work, "hand_built.ftbc.snn.h5")
    run([snnc, "calibrate", model, "-o", cal, "--method", "ftbc", "--data", "fashion-mnist:train", "--T", "8", "--batches", "2",
         "--batch-size", "64", "--quiet"])
    ci = json.loads(run([snnc, "info", cal, "--json"]).stdout)
    check(ci["metadata"].get("calibration") == "ftbc" and ci["metadata"].get("calibration.T") == "8",
          "calibration provenance recorded")
    check(ci["layers"][2]["bias_steps"] == 8, "FTBC bias has T rows")
    sweep = os.path.join(a.work, "sweep.h5")
    c = json.loads(run([snnc, "sweep", cal, "--data", "fashion-mnist:test", "--T", "8", "--limit", "300",
                        "--compare", "none,ftbc,light", "--batches", "2", "--calib-batch-size", "64",
                        "-o", sweep, "--json"]).stdout)
    check(set(c["methods"]) == {"none", "ftbc", "light"}, "sweep --compare reports each method")
    import h5py
    with h5py.File(sweep, "r") as f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        check(attrs["format"] == "snnc-sweep" and "--compare" in attrs["command_line"], "sweep.h5 header + command line")
        check(sorted(f["methods"].keys()) == ["ftbc", "light", "none"], "sweep.h5 methods")
        check(f["methods/ftbc/accuracy"].shape == (8,) and f["methods/ftbc/firing_rate"].shape == (1, 8),
              "sweep.h5 accuracy and firing rates per step")
        check(abs(f["methods/ftbc/accuracy"][-1] - c["methods"]["ftbc"]["accuracy"][-1]) < 1e-9, "sweep.h5 == JSON")
        check(f["methods/none/energy_uj"][-1] > 0 and attrs["pj_per_ac"] == 0.9, "energy estimate stored")
    check(leftovers(a.work) == [], "no temporary files left")

    # Calibration never reads the evaluation data: ftbc-auto (which makes choices on held-out images)
    # calibrated inside a sweep of the test set equals the same calibration run alone on training data.
    auto = os.path.join(a.work, "hand_built.auto.snn.h5")
    run([snnc, "calibrate", model, "-o", auto, "--data", "fashion-mnist:train", "--T", "4",
         "--batches", "2", "--batch-size", "64", "--quiet"])
    ai = json.loads(run([snnc, "info", auto, "--json"]).stdout)["metadata"]
    check(ai.get("calibration") == "ftbc-auto", "calibrate's default method is ftbc-auto (no tuning flags)")
    check("held out" in ai.get("calibration.images_used", "") and "train" in ai.get("calibration.images_used", ""),
          "ftbc-auto records which training images it fitted on and held out")
    alone = json.loads(run([snnc, "sweep", auto, "--data", "fashion-mnist:test", "--T", "4", "--limit", "300",
                            "--json"]).stdout)
    inline = json.loads(run([snnc, "sweep", model, "--data", "fashion-mnist:test", "--T", "4", "--limit", "300",
                             "--compare", "none,ftbc-auto", "--batches", "2", "--calib-batch-size", "64", "--json"]).stdout)
    check(alone["accuracy"] == inline["methods"]["ftbc-auto"]["accuracy"],
          "ftbc-auto inside a sweep of the test set == calibrated alone on training data")

    figs = os.path.join(a.work, "figures")
    env = dict(os.environ, SNNC_SWEEP=sweep, SNNC_FIGURES=figs)
    # The notebook's Python section sweeps the calibrated model through the bindings, when they are built.
    package = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(snnc))), "python")
    bindings = os.path.isfile(os.path.join(package, "snnc", "__init__.py"))
    if bindings:
        env.update(SNNC_MODEL=cal, SNNC_LIMIT="300", PYTHONPATH=package)
    # nbconvert of this interpreter (the project's venv), whose kernel runs this interpreter too.
    nb = run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
              os.path.join(a.repo, "notebooks", "sweep_plots.ipynb"), "--output-dir", a.work,
              "--output", "executed.ipynb"], env=env, expect_ok=False)
    check(nb.returncode == 0, "notebook executes headless" + ("" if nb.returncode == 0 else ": " + nb.stderr[-2000:]))
    for png in ("accuracy_vs_T.png", "firing_rates.png", "energy_vs_T.png") + (("python_sweep.png",) if bindings else ()):
        path = os.path.join(figs, png)
        check(os.path.isfile(path) and os.path.getsize(path) > 10000, f"notebook wrote {png}")

    # Signed spikes and "levels": the examples QCFS VGG (L = 8) equals its CNN at t = T for T >= L.
    # (Needs the TorchScript importer: a build without LibTorch, such as the sanitizer build, skips it.)
    vgg = os.path.join(a.repo, "examples", "models", "vgg_qcfs.pt")
    signed = os.path.join(a.work, "vgg_signed.snn.h5")
    p = run([snnc, "convert", vgg, "-o", signed, "--mean", "0.2860", "--std", "0.3530", "--input-shape", "1,28,28",
             "--spikes", "signed", "--quiet"], expect_ok=False)
    if "without LibTorch" in p.stderr:
        print("skipped the signed-spike conversion checks: this snnc has no TorchScript importer")
    else:
        check(p.returncode == 0, "convert --spikes signed" + ("" if p.returncode == 0 else ": " + p.stderr[-2000:]))
        signed_spike_checks(snnc, a, vgg, signed)

    # Errors: clear message naming the culprit, exit code 1, nothing written.
    def error_case(cmd, needle, what, out=None):
        p = run(cmd, expect_ok=False)
        ok = p.returncode == 1 and needle in p.stderr and "snnc: error:" in p.stderr
        if out is not None:
            ok = ok and not os.path.exists(out)
        check(ok, f"{what} -> exit {p.returncode}: {p.stderr.strip()[:160]}")

    missing = os.path.join(a.work, "nope.snn.h5")
    error_case([snnc, "sweep", missing, "--data", "fashion-mnist:test"], "nope.snn.h5", "missing model")
    trunc = os.path.join(a.work, "truncated.snn.h5")
    with open(model, "rb") as src, open(trunc, "wb") as dst:
        dst.write(src.read()[: os.path.getsize(model) // 2])
    error_case([snnc, "info", trunc], "truncated.snn.h5", "truncated model")
    error_case([snnc, "sweep", model, "--data", "nowhere.h5"], "nowhere.h5", "missing dataset")
    out = os.path.join(a.work, "bad.snn.h5")
    error_case([snnc, "calibrate", model, "-o", out, "--T", "8", "--alpha", "0"], "--alpha", "alpha = 0", out)
    error_case([snnc, "calibrate", model, "-o", out, "--T", "4", "--batches", "100000"], "--batches",
               "more batches than data", out)
    p = run([snnc, "sweep", model, "--data", "fashion-mnist:test", "--T", "0"], expect_ok=False)
    check(p.returncode != 0 and "--T" in p.stderr, f"T = 0 rejected: {p.stderr.strip()[:120]}")
    error_case([snnc, "sweep", model, "--data", "fashion-mnist:test", "--T", "4", "--device", "cuda"], "cuda",
               "--device cuda without a usable CUDA backend") if not os.environ.get("SNNC_HAVE_GPU") else None
    check(leftovers(a.work) == [], "no temporary files left after errors")

    if failures:
        print(f"{len(failures)} check(s) failed:", *failures, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
