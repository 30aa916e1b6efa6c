"""Writes the ONNX backend node tests of the installed onnx package to OUT/node/<test>/.

The onnx wheel defines its node tests in Python (onnx.backend.test.case.node) but ships no data for
them, and its own `backend-test-tools generate-data` writes only the model tests. This writes each node
test as onnx's data layout has it (model.onnx, test_data_set_0/input_k.pb, output_k.pb: serialized
TensorProtos), which is also what Debian's libonnx-testdata installs under
/usr/share/libonnx-testdata/data/node. Tests with sequence, map or optional values are left out: snnc
reads tensors only. Which tests concern snnc is decided by the harness (onnx_node_conformance.cpp).

Usage: onnx_node_testdata.py OUT   exit 0 when written (or already there), 77 when onnx is missing.
"""
import os
import shutil
import sys
import warnings


def tensor_only(case):
    g = case.model.graph
    return all(v.type.HasField("tensor_type") for v in list(g.input) + list(g.output))


def write_case(root, case):
    from onnx import TensorProto, numpy_helper

    out_dir = os.path.join(root, case.name)
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data_dir = os.path.join(out_dir, f"test_data_set_{i}")
        os.makedirs(data_dir)
        for kind, values, infos in (("input", inputs, case.model.graph.input),
                                    ("output", outputs, case.model.graph.output)):
            for j, value in enumerate(values):
                proto = value if isinstance(value, TensorProto) else numpy_helper.from_array(value, infos[j].name)
                with open(os.path.join(data_dir, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(proto.SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: onnx_node_testdata.py OUT")
    try:
        import onnx
        import onnx.backend.test.case.node as node_cases
    except ImportError as e:
        print(f"onnx is not installed ({e}): no node tests to write")
        sys.exit(77)
    root = os.path.join(sys.argv[1], "node")
    stamp = os.path.join(sys.argv[1], "onnx-version")
    # Written once per onnx version: the data is a function of the package only.
    if os.path.isdir(root) and os.path.exists(stamp) and open(stamp).read() == onnx.__version__:
        print(f"node tests of onnx {onnx.__version__} already in {root}")
        return
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cases' own numpy warnings (divide by zero...)
        cases = node_cases.collect_testcases()
    written = 0
    for case in cases:
        if case.model is not None and case.data_sets and tensor_only(case):
            write_case(root, case)
            written += 1
    with open(stamp, "w") as f:
        f.write(onnx.__version__)
    print(f"wrote {written} of {len(cases)} node tests of onnx {onnx.__version__} to {root}")


if __name__ == "__main__":
    main()
