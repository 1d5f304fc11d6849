// Runs ONNX models in ONNX Runtime (npm's onnxruntime-node) on inputs written as raw
// little-endian files, and writes each output the same way.
//
//     node run_ort.js <node_modules dir> <manifest.json>
//
// The manifest is a list of runs: {"model": path, "inputs": [{"name", "dtype"
// ("float32" | "int64"), "dims", "file"}], "outputs": [{"name", "file"}]}.  Prints
// one line per run with the outputs' dims, or its error; exits 1 when a run failed.
const fs = require('fs');
const path = require('path');
const ort = require(path.join(process.argv[2], 'onnxruntime-node'));

const arrays = {
  float32: (buf) => new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4),
  int64: (buf) => new BigInt64Array(buf.buffer, buf.byteOffset, buf.length / 8),
};

async function main() {
  const runs = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
  let failed = 0;
  for (const run of runs) {
    try {
      await runOne(run);
    } catch (e) {
      failed++;
      console.error('FAILED ' + run.model + ': ' + (e && e.message ? e.message : e));
    }
  }
  process.exit(failed ? 1 : 0);
}

async function runOne(run) {
  const session = await ort.InferenceSession.create(run.model);
  const feeds = {};
  for (const input of run.inputs) {
    const buf = fs.readFileSync(input.file);
    const copy = Buffer.alloc(buf.length);  // aligned for the typed array
    buf.copy(copy);
    feeds[input.name] = new ort.Tensor(input.dtype, arrays[input.dtype](copy), input.dims);
  }
  const results = await session.run(feeds);
  const shapes = [];
  for (const output of run.outputs) {
    const t = results[output.name];
    if (!t) throw new Error('no output ' + output.name);
    fs.writeFileSync(output.file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    shapes.push(output.name + ' [' + t.dims.join(', ') + ']');
  }
  console.log('ran ' + run.model + ': ' + shapes.join(', '));
}

main().catch((e) => {
  console.error('onnxruntime: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
