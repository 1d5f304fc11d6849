"""onnx.checker.check_model (with full_check: ONNX's shape inference too) on each
model named on the command line, with Debian's python3-onnx.

    /usr/bin/python3 check_model.py a.onnx b.onnx ...

Prints one line per model; exits 1 when one fails, 77 (ctest's skip) when the onnx
package is missing.
"""
import sys

try:
    import onnx
except ImportError:
    print("onnx is not installed (Debian: python3-onnx): check skipped")
    sys.exit(77)

failed = 0
for path in sys.argv[1:]:
    try:
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        ops = sorted({n.op_type for n in model.graph.node})
        print("ok %s (opset %d): %s" % (path, model.opset_import[0].version, " ".join(ops)))
    except Exception as e:  # the checker's errors have several types
        failed = 1
        print("FAILED %s: %s" % (path, e))
sys.exit(failed)
