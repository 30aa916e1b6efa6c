"""snnc's NIR files in real tools (issue 33): nir.read (nir 1.0.8), then snnTorch (snntorch.import_nir.import_from_nir),
Norse (norse.torch.from_nir) and Sinabs (sinabs.from_nir), each through its own NIR importer, simulated step by
step (dt = 1) on normalised images. Shared by tests/nir/test_nir_tools.py (ctest) and bench/nir_tools.py.

Each tool's known gaps are checked as such (so that a fix upstream shows up as a failed "known" check) and
then bridged with the least help that lets its own modules run snnc's graph; every bridge is named in the
returned notes:
  - nir.read takes snnc's files as written (snnc wrote Flatten's input_type as a group {input: shape}
    before; nir.write writes a dataset and nir.read 1.0.8 failed on the group: fixed in nir_export.cpp).
  - Scale (snnc's θ spike amplitude): no importer maps it (snnTorch: ValueError "Unknown node type";
    Norse, Sinabs: KeyError, the node is dropped). Bridge: the importer's own map plus Scale -> x·scale.
  - AvgPool2d: Norse and Sinabs do not map it (Sinabs has SumPool2d only), so it is dropped as Scale is.
    Bridge: torch.nn.AvgPool2d, as nirtorch's default map does.
  - snnTorch maps IF to snn.Leaky(beta=0.9) with its default reset by subtraction (NIR's IF has no leak
    and resets to v_reset); fires on v > θ; needs one v_threshold per layer. Bridge: beta = 1,
    reset_mechanism = "zero" (both documented Leaky settings).
    Its IF Leaky has init_hidden=False, so it returns (spk, mem) and the fx graph passes the tuple to
    the next node. Bridge: init_hidden = True (returns spk, keeps mem inside, as its other nodes do).
  - Sinabs maps IF to IAFSqueeze with its defaults MultiSpike (floor(v/θ) spikes per step), reset by
    subtraction and min_v_mem = -θ (a floor on v). Bridge: spike_fn = SingleSpike, reset_fn =
    MembraneReset(0), min_v_mem = None (documented IAF arguments). Sinabs fires on v >= θ, as snnc.
  - nirtorch.load (Norse's and Sinabs' importers; deprecated in nirtorch 2) orders a residual graph's
    nodes depth first: the shortcut conv runs after the add that reads it, which then takes the
    shortcut's value from the previous step (none at step 1), and forward returns the last node run
    (the shortcut) instead of Output. Bridge: the executor's execution_order sorted topologically; the
    readout is taken from the node feeding Output.
  - Flatten: snnTorch and Norse give NIR's start_dim (counted without the batch dimension) to
    torch.nn.Flatten as is, flattening the batch too. Bridge: start_dim + 1 (Sinabs does that itself).
  - Norse: IAFCell, v += I (dt unused), z = v > θ, v = v_reset (0): NIR's IF exactly; per-element θ.
"""
import contextlib
import os
import sys
import warnings

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from script_util import read_idx  # noqa: E402

TOOLS = ("snntorch", "norse", "sinabs")




def test_images(fmnist, n, mean, std):
    x = read_idx(f"{fmnist}/t10k-images-idx3-ubyte.gz")[:n].astype(np.float32) / np.float32(255.0)
    y = read_idx(f"{fmnist}/t10k-labels-idx1-ubyte.gz")[:n].astype(np.int64)
    mean, std = np.asarray(mean, np.float32), np.asarray(std, np.float32)
    x = (x[:, None] - mean[None, :, None, None]) / std[None, :, None, None]
    return torch.from_numpy(x), torch.from_numpy(y)


def read_nir(path):
    """nir.read(path): snnc's files are read by NIR's own reader as they are (no help)."""
    import nir
    return nir.read(path)


def h5_node_names(path):
    with h5py.File(path, "r") as f:
        return list(f["node/nodes"])


class ScaleModule(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.register_buffer("scale", torch.as_tensor(np.asarray(scale, np.float32)))

    def forward(self, x):
        return x * self.scale


def _avgpool(node):
    return torch.nn.AvgPool2d(tuple(int(k) for k in node.kernel_size), tuple(int(s) for s in node.stride),
                              tuple(int(p) for p in node.padding))


@contextlib.contextmanager
def extra_nodes(extra):
    """Run an importer with nirtorch mapping the NIR types in `extra` that the importer's own map lacks
    (every other node goes through the importer's own code)."""
    import nirtorch
    orig_to_torch, orig_load = nirtorch.nir_to_torch, nirtorch.load

    def to_torch(graph, node_map, *a, **k):
        return orig_to_torch(graph, {**{t: f for t, f in extra.items() if t not in node_map}, **node_map}, *a, **k)

    def load(graph, model_map, *a, **k):
        def mm(node):
            m = model_map(node)
            return extra[type(node)](node) if m is None and type(node) in extra else m
        return orig_load(graph, mm, *a, **k)
    nirtorch.nir_to_torch, nirtorch.load = to_torch, load
    try:
        yield
    finally:
        nirtorch.nir_to_torch, nirtorch.load = orig_to_torch, orig_load


def _plain_import(tool, graph):
    if tool == "snntorch":
        import sys
        from snntorch.import_nir import import_from_nir
        with contextlib.redirect_stdout(sys.stderr):  # it prints "replace rnn subgraph ..." on stdout
            return import_from_nir(graph)
    if tool == "norse":
        import norse.torch
        return norse.torch.from_nir(graph)
    import sinabs
    return sinabs.from_nir(graph, batch_size=1, num_timesteps=1)


def import_tool(tool, path, batch, fix_neurons=True):
    """The tool's module for snnc's NIR file, with the bridges above. Returns (module, neurons, notes,
    known) where neurons maps NIR IF node names to the tool's neuron modules, notes lists the help given
    and known lists (what, held) for each known gap (held = the gap is still there)."""
    import nir
    graph = read_nir(path)
    notes, known = [], []
    # The plain importer, as shipped: which snnc node it cannot take.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _plain_import(tool, read_nir(path))
            plain_err = None
        except (ValueError, KeyError) as e:
            plain_err = f"{type(e).__name__}: {e}"
    if tool == "snntorch":
        known.append(("snnTorch has no NIR Scale (ValueError: Unknown node type)",
                      plain_err is not None and "Scale" in plain_err))
    else:
        known.append((f"{tool} drops NIR Scale (KeyError on the .amplitude node)",
                      plain_err is not None and "amplitude" in plain_err))
    extra = {nir.Scale: lambda n: ScaleModule(n.scale)}
    if tool in ("norse", "sinabs"):
        extra[nir.AvgPool2d] = _avgpool
    notes.append(f"import: map added for {', '.join(t.__name__ for t in extra)} "
                 f"(plain importer: {plain_err})")
    with warnings.catch_warnings(), extra_nodes(extra):
        warnings.simplefilter("ignore")
        if tool == "sinabs":
            import sinabs
            module = sinabs.from_nir(graph, batch_size=batch, num_timesteps=1)
        else:
            module = _plain_import(tool, graph)
    mods = dict(module.named_modules())
    if hasattr(module, "execution_order"):  # nirtorch.load's GraphExecutor (Norse, Sinabs)
        order = list(module.execution_order)
        pos = {n.name: i for i, n in enumerate(order)}
        late = [(p.name, n.name) for n in order for p in module.graph.find_source_nodes_of(n)
                if p.name in pos and pos[p.name] > pos[n.name]]
        known.append((f"{tool} (nirtorch.load) runs a residual branch after the node that sums it: "
                      + ", ".join(f"{a} after {b}" for a, b in late), bool(late)))
        done, topo = set(), []
        while len(topo) < len(order):
            for n in order:
                if n.name not in done and all(p.name in done or p.name not in pos
                                              for p in module.graph.find_source_nodes_of(n)):
                    topo.append(n)
                    done.add(n.name)
                    break
        module.execution_order = topo
        if late:
            notes.append("execution order: topological (nirtorch.load ran " +
                         ", ".join(f"{a} after {b}" for a, b in late) + ", the add reading last step's value)")
    flat = [(k, v) for k, v in graph.nodes.items() if isinstance(v, nir.Flatten)]
    if tool in ("snntorch", "norse") and flat:
        fl = [mods[k.replace(".", "_")] for k, _ in flat]
        held = all(m.start_dim == int(v.start_dim) for m, (_, v) in zip(fl, flat))
        known.append((f"{tool} takes NIR Flatten's start_dim (which excludes the batch) as torch's", held))
        for m, (_, v) in zip(fl, flat):
            if held and v.start_dim >= 0:
                m.start_dim = int(v.start_dim) + 1
        notes.append("Flatten: start_dim + 1 (the batch dimension)")
    names = {k for k, v in graph.nodes.items() if isinstance(v, nir.IF)}
    neurons = {}
    for name in names:
        key = name.replace(".", "_")
        m = mods.get(key)
        assert m is not None, f"{tool}: no module for IF node {name}"
        neurons[name] = m
    if tool == "snntorch":
        import snntorch as snn
        held = all(isinstance(m, snn.Leaky) and abs(float(m.beta) - 0.9) < 1e-6 and m.reset_mechanism == "subtract"
                   for m in neurons.values())
        known.append(("snnTorch imports IF as Leaky(beta=0.9), reset by subtraction", held))
        known.append(("snnTorch's IF Leaky has init_hidden=False: it returns (spk, mem), which its graph hands "
                      "to the next node", all(not m.init_hidden for m in neurons.values())))
        for m in neurons.values():
            m.init_hidden = True
        notes.append("neurons: Leaky init_hidden False -> True (returns spk, keeps mem)")
        if fix_neurons:
            for m in neurons.values():
                m.beta = torch.ones_like(torch.as_tensor(m.beta))
                m.reset_mechanism = "zero"
            notes.append("neurons: Leaky beta 0.9 -> 1, reset subtract -> zero")
    if tool == "sinabs":
        from sinabs.activation import MembraneReset, MembraneSubtract, MultiSpike, SingleSpike
        held = all(m.spike_fn is MultiSpike and isinstance(m.reset_fn, MembraneSubtract) and m.min_v_mem is not None
                   for m in neurons.values())
        known.append(("Sinabs imports IF as IAF with MultiSpike, reset by subtraction, min_v_mem = -θ", held))
        if fix_neurons:
            for m in neurons.values():
                m.spike_fn, m.reset_fn, m.min_v_mem = SingleSpike, MembraneReset(reset_value=0.0), None
            notes.append("neurons: IAF spike_fn MultiSpike -> SingleSpike, reset subtract -> MembraneReset(0), "
                         "min_v_mem -θ -> None")
    return module, neurons, notes, known


def simulate(tool, path, images, T, fix_neurons=True):
    """The imported network stepped T times on `images` (the same image every step, as snnc's direct
    encoding). Returns (preds [T, N], spikes {IF node: [T] total spikes per step}, ties {IF node: how many
    membranes were exactly θ when it fired or not}, notes, known)."""
    module, neurons, notes, known = import_tool(tool, path, images.shape[0], fix_neurons)
    module.eval()
    counts = {n: np.zeros(T) for n in neurons}
    step = [0]

    def hook(name):
        def f(mod, inp, out):
            z = out[0] if isinstance(out, tuple) else out
            counts[name][step[0]] += float(z.detach().sum())
        return f
    ties = {n: 0 for n in neurons}

    def pre(name):  # membranes landing exactly on θ this step (where v > θ and v >= θ part)
        def f(mod, inp):
            x = inp[0]
            if tool == "norse":
                st = inp[1] if len(inp) > 1 else None
                v, th = (0 if st is None else st.v) + x, mod.p.v_th
            elif tool == "sinabs":
                vm = mod.v_mem
                v, th = (vm + x if vm.shape == x.shape else x), mod.spike_threshold
            else:
                vm = mod.mem
                v, th = (torch.as_tensor(mod.beta).clamp(0, 1) * vm + x if vm.shape == x.shape else x), mod.threshold
            ties[name] += int((v == th).sum())
        return f
    handles = [m.register_forward_hook(hook(n)) for n, m in neurons.items()]
    handles += [m.register_forward_pre_hook(pre(n)) for n, m in neurons.items()]
    graph_out = [k for k, v in read_nir(path).edges if v == "output"]
    assert len(graph_out) == 1
    last = {}
    handles.append(dict(module.named_modules())[graph_out[0].replace(".", "_")].register_forward_hook(
        lambda mod, inp, out: last.__setitem__("y", out)))
    readout, preds, state = None, [], None
    with torch.no_grad():
        for t in range(T):
            step[0] = t
            if tool == "norse":
                _, state = module(images, state)  # state: nirtorch's GraphExecutorState, as Norse's docs
            else:
                module(images)  # snnTorch's Leaky and Sinabs' IAF keep their membranes inside the module
            out = last.pop("y")
            readout = out.clone() if readout is None else readout + out
            preds.append(readout.argmax(1))
    for h in handles:
        h.remove()
    return torch.stack(preds), counts, ties, notes, known


def snnc_sweep(snnc, run, model, n, T, out):
    """snnc's accuracy per t and spikes per neuron layer per step, from `snnc sweep -o`."""
    run([snnc, "sweep", model, "--data", "fashion-mnist:test", "--limit", str(n), "--T", str(T), "-o", out, "-q"])
    with h5py.File(out, "r") as f:
        g = f["methods"][list(f["methods"])[0]]
        acc = g["accuracy"][()]
        names = [s.decode() for s in g["neuron_layers"][()]]
        rate, neurons = g["firing_rate"][()], g["neurons"][()]
    spikes = {name: rate[i] * neurons[i] * n for i, name in enumerate(names)}
    return acc, spikes


def compare(tool, nir_path, snnc_acc, snnc_spikes, images, labels, T, fix_neurons=True):
    """One tool against snnc: accuracy per t, differing predictions, per-layer spike totals."""
    preds, counts, ties, notes, known = simulate(tool, nir_path, images, T, fix_neurons)
    acc = [(preds[t] == labels).float().mean().item() * 100 for t in range(T)]
    gaps = [abs(a - b) for a, b in zip(acc, snnc_acc)]
    layer = {}
    for node, c in counts.items():
        snnc_name = node.split("_", 1)[1]
        s = snnc_spikes[snnc_name]
        layer[snnc_name] = {"tool": float(c.sum()), "snnc": float(s.sum()),
                            "rel_gap": float(abs(c.sum() - s.sum()) / max(s.sum(), 1.0)),
                            "max_step_gap": float(np.abs(c - s).max())}
    return {"tool": tool, "accuracy": acc, "max_acc_gap_pt": max(gaps),
            "final_acc": acc[-1], "snnc_final_acc": float(snnc_acc[-1]),
            "spikes": layer, "ties": sum(ties.values()), "max_rel_spike_gap": max(v["rel_gap"] for v in layer.values()),
            "notes": notes, "known": [{"what": w, "held": h} for w, h in known], "preds": preds}
