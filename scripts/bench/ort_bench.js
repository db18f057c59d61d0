// ONNX Runtime CPU latency for one model: the anchor bench_executor.sh compares porttool against.
// Usage: node ort_bench.js MODEL --shape 1,3,640,640 --threads T --repeat N [--op-times 1]
// Prints one JSON line: {"threads", "median_ms", "min_ms", "max_ms"}. Random inputs (fixed seed);
// dynamic dims take --shape. One warm-up run, then N timed runs. With --op-times 1, ORT's own
// profiler times every kernel and the line gains "op_types": {op: median ms per timed run} (ORT's
// op names after its fusions: Gemm = MatMul+Add, FusedConv = Conv+activation, ...) and "nodes":
// {node name: {op, ms}} the same way per node (the names ORT gives the nodes after its fusions).
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require(path.join(__dirname, '..', 'ort', 'node_modules', 'onnxruntime-node'));

function parseArgs(argv) {
  const args = { model: argv[0], shape: null, threads: 1, repeat: 10, opTimes: false };
  for (let i = 1; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    const value = argv[i + 1];
    if (key === 'shape') args.shape = value.split(',').map(Number);
    else if (key === 'threads') args.threads = Number(value);
    else if (key === 'repeat') args.repeat = Number(value);
    else if (key === 'op-times') args.opTimes = value === '1';
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return args;
}

function randomTensor(dims) {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let state = 12345;
  for (let i = 0; i < n; ++i) {
    state = (state * 1103515245 + 12345) % 2147483648;
    data[i] = state / 2147483648;
  }
  return new ort.Tensor('float32', data, dims);
}

// Kernel time per op type: each timed run's total for the type (node events inside every
// `model_run` event but the first, the warm-up), then the median over the runs, as porttool's
// --profile reports it (a mean let one stalled run in 100 move a 0.1 ms op by 0.1 ms).
function opTimes(dir) {
  const file = fs.readdirSync(dir).find((f) => f.endsWith('.json'));
  const events = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
  const windows = events.filter((e) => e.name === 'model_run').sort((a, b) => a.ts - b.ts).slice(1);
  const runOf = (e) => {  // the window holding e (binary search over the sorted starts), or -1
    let lo = 0, hi = windows.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (windows[mid].ts <= e.ts) lo = mid; else hi = mid - 1;
    }
    const w = windows[lo];
    return w && e.ts >= w.ts && e.ts <= w.ts + w.dur ? lo : -1;
  };
  const perRun = {};   // op -> [ms per timed run]
  const perNode = {};  // node -> [ms per timed run]
  const opOf = {};
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const run = runOf(e);
    if (run < 0) continue;
    const op = e.args.op_name;
    const node = e.name.slice(0, -'_kernel_time'.length);
    if (!perRun[op]) perRun[op] = new Array(windows.length).fill(0);
    if (!perNode[node]) perNode[node] = new Array(windows.length).fill(0);
    perRun[op][run] += e.dur / 1000;
    perNode[node][run] += e.dur / 1000;
    opOf[node] = op;
  }
  const medians = {}, nodes = {};
  for (const [op, times] of Object.entries(perRun)) medians[op] = median(times);
  for (const [node, times] of Object.entries(perNode)) {
    nodes[node] = { op: opOf[node], ms: median(times) };
  }
  return { medians, nodes };
}

function median(values) {
  const v = [...values].sort((a, b) => a - b);
  const n = v.length;
  return n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort_bench-'));
  const session = await ort.InferenceSession.create(args.model, {
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableProfiling: args.opTimes,
    profileFilePrefix: args.opTimes ? path.join(profileDir, 'ort') : undefined,
  });
  const feeds = {};
  for (const name of session.inputNames) feeds[name] = randomTensor(args.shape);
  await session.run(feeds);  // warm-up
  const times = [];
  for (let i = 0; i < args.repeat; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const result = { threads: args.threads, median_ms: median(times), min_ms: times[0],
                   max_ms: times[times.length - 1] };
  if (args.opTimes) {
    session.endProfiling();
    const { medians, nodes } = opTimes(profileDir);
    result.op_types = medians;
    result.nodes = nodes;
  }
  fs.rmSync(profileDir, { recursive: true, force: true });
  console.log(JSON.stringify(result));
}

main().catch((e) => { console.error(`ort_bench: ${e.message}`); process.exit(3); });
