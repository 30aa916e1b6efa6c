#!/usr/bin/env python3
"""The reference runtime of snnc's faithfulness check for .pt2 and ONNX models.

snnc reads .pt2 and ONNX files natively; to check that what it read computes what the framework
computes, it runs this script (in a Python with torch / onnxruntime) on the check images and compares
every layer with the framework's own value of the graph value the layer stands for.

    snnc_reference.py --format onnx|pt2 --model M --inputs in.h5 --names names.txt --layer-images K --out out.h5

in.h5: dataset `inputs` [N, C, H, W] float32 (preprocessed). names.txt: one graph value name per line
(ONNX value names, FX node names). out.h5: `output` [N, ...] (the model's output on all N images),
`values/<i>` [K, ...] for the i-th name (on the first K images; missing when the runtime has no such
value), attribute `runtime` ("onnxruntime 1.31.1", "torch 2.15.0"). Exit status 3: the runtime is not
installed (the message says which); anything else non-zero: the model did not run.
"""
import argparse
import sys


def batches(x, batch):
    """Chunks of exactly `batch` images (graphs exported with a static batch need it); the last is padded."""
    import numpy as np
    for start in range(0, len(x), batch):
        chunk = x[start:start + batch]
        real = len(chunk)
        if real < batch:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], batch - real, axis=0)])
        yield start, real, chunk


def run_onnx(model, x, names, k):
    try:
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        print(f"onnxruntime is not installed ({e})", file=sys.stderr)
        sys.exit(3)
    m = onnx.load(model)  # external data is read from beside the model
    # Only values the graph has (snnc names some values of its own, e.g. one per axis of a Slice).
    exists = {v for n in m.graph.node for v in n.output} | {i.name for i in m.graph.input}
    names = [n for n in names if n in exists]
    known = {o.name for o in m.graph.output}
    for name in names:
        if name not in known:
            m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the graph's own ops
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    dim0 = inp.shape[0]
    batch = dim0 if isinstance(dim0, int) and dim0 > 0 else len(x)
    first_out = m.graph.output[0].name
    outputs, values = [], {n: [] for n in names}
    for start, real, chunk in batches(x, batch):
        want = [first_out] + (names if start < k else [])
        got = sess.run(want, {inp.name: chunk})
        outputs.append(got[0][:real])
        for n, v in zip(want[1:], got[1:]):
            values[n].append(v[:real])
    return outputs, values, f"onnxruntime {ort.__version__}"


def run_pt2(model, x, names, k):
    try:
        import torch
        import torch.fx
    except ImportError as e:
        print(f"torch is not installed ({e})", file=sys.stderr)
        sys.exit(3)
    ep = torch.export.load(model)
    gm = ep.graph_module
    sig = ep.graph_signature
    consts = ep.constants
    state = ep.state_dict
    wanted = set(names)

    class Capture(torch.fx.Interpreter):
        def __init__(self, module):
            super().__init__(module)
            self.captured = {}

        def run_node(self, n):
            r = super().run_node(n)
            if n.name in wanted and isinstance(r, torch.Tensor):
                # A copy: a later in-place op (relu_, add_) would change the value the node had.
                self.captured[n.name] = r.detach().clone()
            return r

    user = [s for s in sig.input_specs if s.kind.name == "USER_INPUT"]
    batch = None
    for node in gm.graph.nodes:
        if node.op == "placeholder" and node.name == user[0].arg.name:
            batch = int(node.meta["val"].shape[0])
    outputs, values = [], {n: [] for n in names}
    with torch.no_grad():
        for start, real, chunk in batches(x, batch or len(x)):
            args = []
            for s in sig.input_specs:
                kind = s.kind.name
                if kind == "USER_INPUT":
                    args.append(torch.from_numpy(chunk))
                elif s.target in state:
                    args.append(state[s.target])
                else:
                    args.append(consts[s.target])
            interp = Capture(gm)
            out = interp.run(*args)
            while isinstance(out, (tuple, list)):
                out = out[0]
            outputs.append(out[:real].float().numpy())
            if start < k:
                for n, v in interp.captured.items():
                    values[n].append(v[:real].float().numpy())
    return outputs, values, f"torch {torch.__version__}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", choices=["onnx", "pt2"], required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--names", required=True)
    ap.add_argument("--layer-images", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        import h5py
        import numpy as np
    except ImportError as e:
        print(f"h5py/numpy are not installed ({e})", file=sys.stderr)
        sys.exit(3)
    with h5py.File(a.inputs, "r") as f:
        x = np.ascontiguousarray(f["inputs"][...], dtype=np.float32)
    with open(a.names) as f:
        names = [line.rstrip("\n") for line in f if line.strip()]
    run = run_onnx if a.format == "onnx" else run_pt2
    outputs, values, runtime = run(a.model, x, list(names), a.layer_images)
    with h5py.File(a.out, "w") as f:
        f.attrs["runtime"] = runtime
        f["output"] = np.concatenate(outputs).astype(np.float32)
        g = f.create_group("values")
        for i, n in enumerate(names):
            if values.get(n):
                g[str(i)] = np.concatenate(values[n])[: a.layer_images].astype(np.float32)


if __name__ == "__main__":
    main()
