#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (npm onnxruntime-node, installed by `scripts/setup.sh --ort`
// into scripts/ort/) as the independent reference for porttool's executor.
//
//   node scripts/ort_run.js MODEL [--input NAME=FILE ...] [--output-dir DIR] [--threads N]
//        [--repeat N] [--opt disabled|basic|extended|all]
//   node scripts/ort_run.js --pipeline DIR/pipeline.json [--input ...] [--output-dir DIR] ...
//        runs a split's (or a port bundle's) segments chained in order, each fed from the inputs
//        and the bridges earlier segments produced; the outputs are the pipeline's graph outputs.
//
// Inputs: .npy (C order, little-endian) or ONNX TensorProto .pb. Outputs: DIR/<name>.npy with the
// same name sanitising as `porttool run`. Prints one JSON document like `porttool run --json`.
'use strict';
const fs = require('fs');
const path = require('path');

function loadOrt() {
  // $PORTTOOL_ORT_DIR: a folder holding node_modules/onnxruntime-node installed elsewhere.
  const base = process.env.PORTTOOL_ORT_DIR || path.join(__dirname, 'ort');
  const local = path.join(base, 'node_modules', 'onnxruntime-node');
  try {
    return require(local);
  } catch (e) {
    console.error(`ort_run: cannot load onnxruntime-node from ${local}: ${e.message}\n` +
                  'install it with scripts/setup.sh --ort');
    process.exit(3);
  }
}

const NPY = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '|i1': ['int8', Int8Array],
  '<f2': ['float16', Uint16Array],  // ORT's float16 tensors hold the raw binary16 bits
  '|u1': ['uint8', Uint8Array], '<i2': ['int16', Int16Array], '<u2': ['uint16', Uint16Array],
  '<i4': ['int32', Int32Array], '<u4': ['uint32', Uint32Array], '<i8': ['int64', BigInt64Array],
  '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
};
// ONNX TensorProto.DataType -> npy descr
const ONNX_TYPES = {1: '<f4', 2: '|u1', 3: '|i1', 4: '<u2', 5: '<i2', 6: '<i4', 7: '<i8',
                    9: '|b1', 10: '<f2', 11: '<f8', 12: '<u4', 13: '<u8'};

function typedFrom(buf, Ctor) {
  const copy = Buffer.from(buf);  // aligned copy
  return new Ctor(copy.buffer, copy.byteOffset, copy.length / Ctor.BYTES_PER_ELEMENT);
}

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.slice(start, start + hlen).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim())
      .filter(s => s.length).map(Number);
  if (!NPY[descr]) throw new Error(`${file}: unsupported dtype ${descr}`);
  return [descr, dims, buf.slice(start + hlen)];
}

// Minimal protobuf reader for onnx.TensorProto: dims(1) data_type(2) float_data(4) int32_data(5)
// int64_data(7) raw_data(9) double_data(10).
function readPb(file) {
  const buf = fs.readFileSync(file);
  let pos = 0;
  const varint = () => {
    let v = 0n, shift = 0n, b;
    do { b = buf[pos++]; v |= BigInt(b & 0x7f) << shift; shift += 7n; } while (b & 0x80);
    return v;
  };
  const dims = []; let type = 0; let raw = null; const floats = [], ints = [], doubles = [];
  while (pos < buf.length) {
    const key = Number(varint()), field = key >> 3, wire = key & 7;
    const repeated = (push, read) => {
      if (wire === 2) { const end = pos + Number(varint()); while (pos < end) push(read()); }
      else push(read());
    };
    if (field === 1) repeated(v => dims.push(Number(v)), varint);
    else if (field === 2) type = Number(varint());
    else if (field === 4) repeated(v => floats.push(v), () => { pos += 4; return buf.readFloatLE(pos - 4); });
    else if (field === 5 || field === 7) repeated(v => ints.push(v), varint);
    else if (field === 10) repeated(v => doubles.push(v), () => { pos += 8; return buf.readDoubleLE(pos - 8); });
    else if (field === 9) { const n = Number(varint()); raw = buf.slice(pos, pos + n); pos += n; }
    else if (wire === 0) varint();
    else if (wire === 2) { const n = Number(varint()); pos += n; }
    else if (wire === 5) pos += 4;
    else if (wire === 1) pos += 8;
    else throw new Error(`${file}: unsupported protobuf wire type ${wire}`);
  }
  const descr = ONNX_TYPES[type];
  if (!descr) throw new Error(`${file}: unsupported ONNX data type ${type}`);
  if (raw) return [descr, dims, raw];
  const [, Ctor] = NPY[descr];
  let arr;
  if (floats.length) arr = Float32Array.from(floats);
  else if (doubles.length) arr = Float64Array.from(doubles);
  else if (Ctor === BigInt64Array || Ctor === BigUint64Array) arr = Ctor.from(ints.map(BigInt.asIntN.bind(null, 64)));
  else arr = Ctor.from(ints.map(Number));
  return [descr, dims, Buffer.from(arr.buffer)];
}

function toOrtTensor(ort, file) {
  const [descr, dims, data] = file.endsWith('.pb') ? readPb(file) : readNpy(file);
  const [type, Ctor] = NPY[descr];
  const count = dims.reduce((a, b) => a * b, 1);
  const values = typedFrom(data.slice(0, count * Ctor.BYTES_PER_ELEMENT), Ctor);
  return new ort.Tensor(type, type === 'bool' ? Uint8Array.from(values) : values, dims);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(NPY).find(k => NPY[k][0] === tensor.type);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1'); pre[6] = 1; pre[7] = 0; pre.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

function sanitize(name) {
  let s = (name || '_').replace(/[^A-Za-z0-9._-]/g, '_');
  return s[0] === '.' ? '_' + s.slice(1) : s;
}

// The segments of pipeline.json as one session: run() feeds each segment from the inputs and the
// earlier segments' outputs, by name, and returns the pipeline's graph outputs.
class PipelineSession {
  static async create(ort, manifestFile, options) {
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    const dir = path.dirname(manifestFile);
    const self = new PipelineSession();
    self.segments = [];
    for (const seg of manifest.segments) {
      self.segments.push(await ort.InferenceSession.create(path.join(dir, seg.file), options));
    }
    self.outputNames = Object.keys(manifest.graph_outputs);
    return self;
  }
  async run(feeds) {
    const pool = Object.assign({}, feeds);
    for (const seg of this.segments) {
      const feed = {};
      for (const name of seg.inputNames) feed[name] = pool[name];
      Object.assign(pool, await seg.run(feed));
    }
    return pool;
  }
}

async function main() {
  const args = process.argv.slice(2);
  if (!args.length || args[0] === '--help') {
    console.log('usage: node scripts/ort_run.js MODEL [--input NAME=FILE ...] [--output-dir DIR] ' +
                '[--threads N] [--repeat N] [--opt disabled|basic|extended|all]');
    process.exit(args.length ? 0 : 2);
  }
  const opts = {model: args[0], inputs: [], outputDir: null, threads: 0, repeat: 0, opt: 'all',
                pipeline: null};
  for (let i = 1; i < args.length; i++) {
    const a = args[i];
    if (a === '--input') opts.inputs.push(args[++i]);
    else if (i === 1 && args[0] === '--pipeline') opts.pipeline = a;
    else if (a === '--output-dir') opts.outputDir = args[++i];
    else if (a === '--threads') opts.threads = Number(args[++i]);
    else if (a === '--repeat') opts.repeat = Number(args[++i]);
    else if (a === '--opt') opts.opt = args[++i];
    else { console.error(`ort_run: unknown argument ${a}`); process.exit(2); }
  }
  const ort = loadOrt();
  const sessionOptions = {graphOptimizationLevel: opts.opt, executionMode: 'sequential'};
  if (opts.threads > 0) { sessionOptions.intraOpNumThreads = opts.threads; sessionOptions.interOpNumThreads = 1; }
  const session = opts.pipeline ? await PipelineSession.create(ort, opts.pipeline, sessionOptions)
                                : await ort.InferenceSession.create(opts.model, sessionOptions);
  const feeds = {};
  for (const spec of opts.inputs) {
    const eq = spec.indexOf('=');
    feeds[spec.slice(0, eq)] = toOrtTensor(ort, spec.slice(eq + 1));
  }
  let results;
  const times = [];
  if (opts.repeat > 0) results = await session.run(feeds);  // warm-up
  for (let i = 0; i < Math.max(opts.repeat, 1); i++) {
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const n = times.length;
  const doc = {outputs: [], latency_ms: {
    median: n % 2 ? times[(n - 1) / 2] : (times[n / 2 - 1] + times[n / 2]) / 2,
    min: times[0], max: times[n - 1]}, peak_rss_kb: Math.round(process.resourceUsage().maxRSS)};
  if (opts.outputDir) fs.mkdirSync(opts.outputDir, {recursive: true});
  for (const name of session.outputNames) {
    const t = results[name];
    let file = null;
    if (opts.outputDir) { file = path.join(opts.outputDir, sanitize(name) + '.npy'); writeNpy(file, t); }
    doc.outputs.push({name, file, dtype: t.type, shape: t.dims});
  }
  console.log(JSON.stringify(doc, null, 2));
}

if (require.main === module) {
  main().catch(e => { console.error(`ort_run: ${e.message}`); process.exit(3); });
}
module.exports = {loadOrt, toOrtTensor};
