#!/usr/bin/env python3
"""snnc import (NIR in, issue 33): (1) snnc's own NIR export of the examples ResNet (--reset zero --v-init 0,
light calibration) imports back to a network whose sweep gives the original's accuracy at every t and its
firing rates; (2) graphs written by snnTorch's, Norse's and SpikingJelly's own exporters (small nets, weights fitted in a few
seconds as a CNN) import, and snnc's sweep agrees with the library's own simulation at every t on 300
Fashion-MNIST test images (accuracy per t, and the output layer's spike count); (3) what snnc cannot
run is refused with exit 1, naming the node and its type, leaving no output. Exits 77 without Fashion-MNIST
or the TorchScript importer."""
import json, os, shutil, sys, warnings

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from script_util import FMNIST, SKIP, Script, read_idx, run  # noqa: E402

N, T = 300, 32




def fashion(split, n):
    x = read_idx(f"{FMNIST}/{split}-images-idx3-ubyte.gz")[:n].astype(np.float32) / np.float32(255.0)
    y = read_idx(f"{FMNIST}/{split}-labels-idx1-ubyte.gz")[:n].astype(np.int64)
    return torch.from_numpy(x[:, None]), torch.from_numpy(y)


def fit(layers, steps=300):
    """A few hundred Adam steps of the ReLU CNN made of `layers` (so the spiking nets classify)."""
    torch.manual_seed(0)
    x, y = fashion("train", 6000)
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.Adam(net.parameters(), 3e-3)
    for s in range(steps):
        i = torch.randint(0, len(x), (64,))
        loss = torch.nn.functional.cross_entropy(net(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def sweep(snnc, model, extra=()):
    return json.loads(run([snnc, "sweep", model, "--data", "fashion-mnist:test", "--limit", str(N), "--T", str(T),
                           "--json", "-q", *extra]).stdout)


def library_accuracy(step, x, y):
    """Accuracy per t of a library's own simulation: step(x, t) gives the output spikes at t."""
    counts, acc = 0, []
    with torch.no_grad():
        for t in range(T):
            counts = counts + step(x, t)
            acc.append((counts.argmax(1) == y).float().mean().item() * 100)
    return acc, counts


def compare(check, who, acc_lib, counts, sw, out_node):
    gaps = [abs(a - b) for a, b in zip(acc_lib, sw["accuracy"])]
    differ = sum(1 for g in gaps if g > 1e-4)  # float32 means in torch
    print(f"     {who}  lib {['%.1f' % v for v in acc_lib[3::4]]}\n     {who} snnc {['%.1f' % v for v in sw['accuracy'][3::4]]}")
    check(sw["accuracy"][-1] > 40, f"{who}: the imported net classifies (snnc {sw['accuracy'][-1]:.1f} % at T = {T})")
    check(max(gaps) <= 100.0 / N + 1e-9,
          f"{who}: snnc's accuracy equals the library's at every t (largest gap {max(gaps):.2f} pt at "
          f"{differ} of {T} steps; at most one image: v ≥ θ vs v > θ, float rounding of folded gains)")
    rate = counts.sum().item() / counts.numel() / T
    check(abs(rate - sw["firing_rate"][out_node]) < 1e-3, f"{who}: output spikes per neuron per step: library {rate:.5f}, "
                                                            f"snnc {sw['firing_rate'][out_node]:.5f}")
    return max(gaps), differ


def round_trip(s, snnc, repo):
    check, w = s.check, s.path
    pt = os.path.join(repo, "examples/models/resnet_relu.pt")
    p = run([snnc, "convert", pt, "--data", "fashion-mnist:train", "--limit", "512", "--mean", "0.2860", "--std", "0.3530",
             "-q", "-o", w("rz.snn.h5"), "--reset", "zero", "--v-init", "0"], expect_ok=False)
    if p.returncode != 0 and "without" in p.stderr:
        return False
    check(p.returncode == 0, "convert the examples ResNet for NIR (--reset zero --v-init 0)")
    run([snnc, "calibrate", w("rz.snn.h5"), "-o", w("light.snn.h5"), "--method", "light", "--T", "32", "--batches", "2",
         "--batch-size", "64", "-q"])
    run([snnc, "export", w("light.snn.h5"), "-o", w("light.nir")])
    rep = json.loads(run([snnc, "import", w("light.nir"), "-o", w("back.snn.h5"), "--json"]).stdout)
    check(rep["nodes"] == 28 and rep["notes"] == [], f"import: {rep['layers']} layers from {rep['nodes']} nodes, nothing added")
    a, b = sweep(snnc, w("light.snn.h5")), sweep(snnc, w("back.snn.h5"))
    check(a["accuracy"] == b["accuracy"] and a["accuracy"][-1] > 50,
          f"re-imported ResNet: accuracy at every t equals the original's ({b['accuracy'][-1]:.1f} % at T = {T})")
    info = json.loads(run([snnc, "info", w("light.snn.h5"), "--json"]).stdout)
    gaps = [abs(a["firing_rate"][l["name"]] - b["firing_rate"][f"n{i}_{l['name']}"])
            for i, l in enumerate(info["layers"]) if l["type"] == "neuron"]
    check(max(gaps) < 1e-5, f"... and every layer's firing rate (largest gap {max(gaps):.1e}: the light bias folded into "
                            f"the conv bias rounds differently)")
    return True


def snntorch_case(s, snnc):
    import snntorch as snn
    from snntorch.export_nir import export_to_nir
    import nir
    cnn = fit([torch.nn.Conv2d(1, 8, 5, stride=2), torch.nn.ReLU(), torch.nn.AvgPool2d(2), torch.nn.Flatten(),
               torch.nn.Linear(8 * 6 * 6, 10)])
    # snnTorch 1.0's exporter needs per-neuron β and thresholds (scalars fail nir's type check); reset to
    # zero is NIR's (its default, subtract, is not in the file).
    lif = lambda shape, beta, **k: snn.Leaky(beta=torch.full(shape, beta), threshold=torch.ones(shape), init_hidden=True,
                                             reset_mechanism="zero", **k)
    net = torch.nn.Sequential(cnn[0], lif((8, 12, 12), 0.9), cnn[2], cnn[3], cnn[4], lif((10,), 0.8, output=True))
    x, y = fashion("t10k", N)
    nir.write(s.path("snntorch.nir"), export_to_nir(net, x[:1], ignore_dims=[0]))
    run([snnc, "import", s.path("snntorch.nir"), "-o", s.path("snntorch.snn.h5"), "--dt", "1e-4", "-q"])
    for m in net.modules():
        if isinstance(m, snn.Leaky):
            m.reset_mem()
    acc, counts = library_accuracy(lambda xx, t: net(xx)[0], x, y)
    return compare(s.check, "snnTorch", acc, counts, sweep(snnc, s.path("snntorch.snn.h5")), "5")


def norse_case(s, snnc):
    import norse.torch as norse
    import nir
    mlp = fit([torch.nn.Flatten(), torch.nn.Linear(784, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)])
    with torch.no_grad():  # the LIFBox integrates dt/τ = 0.1 of its input: make up for it
        mlp[3].weight *= 10
        mlp[3].bias *= 10
    net = norse.SequentialState(mlp[1], norse.IAFCell(), mlp[3], norse.LIFBoxCell())
    x, y = fashion("t10k", N)
    xf = x.flatten(1)
    # Norse writes 0-d parameters, which nir.write cannot compress; its Input is [1, 784] (batch included).
    nir.write(s.path("norse.nir"), norse.to_nir(net, xf[:1]), compression=None)
    run([snnc, "import", s.path("norse.nir"), "-o", s.path("norse.snn.h5"), "--dt", "1e-6", "--if-dt", "1",
         "--input-shape", "1,28,28", "-q"])
    state = [None]

    def step(xx, t):
        out, state[0] = net(xx, state[0])
        return out
    acc, counts = library_accuracy(step, xf, y)
    return compare(s.check, "Norse", acc, counts, sweep(snnc, s.path("norse.snn.h5")), "3")


def spikingjelly_case(s, snnc):
    from spikingjelly.activation_based import functional, neuron
    from spikingjelly.activation_based.nir_exchange import export_to_nir
    cnn = fit([torch.nn.Conv2d(1, 8, 5, stride=2), torch.nn.ReLU(), torch.nn.AvgPool2d(2), torch.nn.Flatten(),
               torch.nn.Linear(8 * 6 * 6, 10)])
    # IFNode's defaults: hard reset to 0, threshold 1, fires on v ≥ θ (as snnc); its exporter writes the
    # continuous-time IF with r = 1/dt for dt = 1e-4, its default.
    net = torch.nn.Sequential(cnn[0], neuron.IFNode(), cnn[2], cnn[3], cnn[4], neuron.IFNode())
    x, y = fashion("t10k", N)
    export_to_nir(net, x[:1], s.path("spikingjelly.nir"))
    functional.reset_net(net)
    run([snnc, "import", s.path("spikingjelly.nir"), "-o", s.path("spikingjelly.snn.h5"), "--dt", "1e-4", "-q"])
    acc, counts = library_accuracy(lambda xx, t: net(xx), x, y)
    out = json.loads(run([snnc, "info", s.path("spikingjelly.snn.h5"), "--json"]).stdout)["layers"]
    last = [l["name"] for l in out if l["type"] == "neuron"][-1]
    return compare(s.check, "SpikingJelly", acc, counts, sweep(snnc, s.path("spikingjelly.snn.h5")), last)


def edited(src, dst, edit):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        edit(f)
    return dst


def refusals(s, snnc):
    check, w = s.check, s.path
    good, out = w("snntorch.nir"), w("never.snn.h5")

    def refused(path, words, what, extra=()):
        p = run([snnc, "import", path, "-o", out, *extra], expect_ok=False)
        ok = p.returncode == 1 and all(x in p.stderr for x in words) and not os.path.exists(out)
        check(ok, f"{what}: exit 1, names {words}, nothing written" + ("" if ok else f" (got {p.returncode}: {p.stderr})"))

    def retype(name, new):
        def edit(f):
            del f[f"node/nodes/{name}/type"]
            f[f"node/nodes/{name}"].create_dataset("type", data=new, dtype=h5py.string_dtype())
        return edit
    refused(edited(good, w("cuba.nir"), retype("1", "CubaLIF")), ["'1'", "CubaLIF"], "an unsupported node type (CubaLIF)")
    refused(edited(good, w("li.nir"), retype("5", "LI")), ["'5'", "LI"], "a leaky integrator (LI)")

    def nest(f):
        g = f["node/nodes"].create_group("sub")
        g.create_dataset("type", data="NIRGraph", dtype=h5py.string_dtype())
        g.create_group("nodes")
        e = [tuple(x) for x in f["node/edges"][()]] + [(b"1", b"sub"), (b"sub", b"2")]
        del f["node/edges"]
        f["node"].create_dataset("edges", data=np.array(e, dtype=object), dtype=h5py.string_dtype())
    refused(edited(good, w("nested.nir"), nest), ["'sub'", "NIRGraph", "nested"], "a nested graph")

    def cycle(f):
        e = [tuple(x) for x in f["node/edges"][()]] + [(b"4", b"0")]
        del f["node/edges"]
        f["node"].create_dataset("edges", data=np.array(e, dtype=object), dtype=h5py.string_dtype())
    refused(edited(good, w("cycle.nir"), cycle), ["cycle", "node '"], "a cycle (recurrent edge)")

    def reset(f):
        v = f["node/nodes/1/v_reset"]
        v[...] = np.full(v.shape, 0.5, dtype=v.dtype)
    refused(edited(good, w("reset.nir"), reset), ["'1'", "LIF", "v_reset"], "v_reset ≠ 0")
    refused(good, ["'1'", "dt/τ", "--dt"], "snnTorch's τ read with dt = 1 (no --dt)")
    with open(good, "rb") as f:
        data = f.read()
    with open(w("truncated.nir"), "wb") as f:
        f.write(data[:len(data) // 2])
    refused(w("truncated.nir"), ["truncated.nir"], "a truncated file")
    with open(w("text.nir"), "w") as f:
        f.write("not a graph\n")
    refused(w("text.nir"), ["text.nir", "not an HDF5 file"], "a file that is not HDF5")
    before = os.path.getsize(good)
    p = run([snnc, "import", good, "-o", good, "--dt", "1e-4"], expect_ok=False)
    check(p.returncode == 1 and "input" in p.stderr and os.path.getsize(good) == before,
          "an output that is the input is refused, the input untouched")


def main():
    warnings.filterwarnings("ignore")
    s = Script()
    if s.skipped:
        return SKIP
    snnc = s.args.snnc
    if not round_trip(s, snnc, s.args.repo):
        print("skipped: snnc built without the TorchScript importer")
        return SKIP
    results = {"snnTorch": snntorch_case(s, snnc), "Norse": norse_case(s, snnc),
               "SpikingJelly": spikingjelly_case(s, snnc)}
    for who, (gap, steps) in results.items():
        print(f"     {who}: largest accuracy gap {gap:.2f} pt, differing at {steps} of {T} steps ({N} images)")
    refusals(s, snnc)
    return s.finish()


if __name__ == "__main__":
    sys.exit(main())
