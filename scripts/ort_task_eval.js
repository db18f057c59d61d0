#!/usr/bin/env node
// Task metrics of a quantized model against its float original, both run in ONNX Runtime: the
// independent check of what `porttool quantize-calibrate --task` reports from its own executor.
//
//   node scripts/ort_task_eval.js FLOAT.onnx QDQ.onnx SAMPLE_DIR --task ctc|classify|detect-db
//        [--labels FILE.json] [--threads N]
//
// Samples: SAMPLE_DIR/<id>.<input>.npy (one input). Metrics as lib/quant/task_metrics.h defines
// them, written again here: ctc greedy decoding (blank 0) -> sequence and character agreement;
// classify -> top-1 agreement (+ each model's accuracy with labels); detect-db (thresh 0.3,
// box-thresh 0.6, unclip 1.5, min-size 3, axis-aligned) -> hmean of the quantized boxes against
// the float ones at IoU >= 0.5 (+ each model's against labels). Prints one JSON document.
'use strict';
const fs = require('fs');
const path = require('path');
const {loadOrt, toOrtTensor} = require('./ort_run.js');

function argmax(a, off, n) {
  let best = 0;
  for (let i = 1; i < n; i++) if (a[off + i] > a[off + best]) best = i;
  return best;
}

function ctcDecode(t) {
  const [, steps, c] = t.dims;
  const out = [];
  let prev = -1;
  for (let s = 0; s < steps; s++) {
    const k = argmax(t.data, s * c, c);
    if (k !== prev && k !== 0) out.push(k);
    prev = k;
  }
  return out;
}

function editDistance(a, b) {
  let row = Array.from({length: b.length + 1}, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] !== b[j - 1] ? 1 : 0));
    }
    row = next;
  }
  return row[b.length];
}

function dbBoxes(t) {
  const h = t.dims[t.dims.length - 2], w = t.dims[t.dims.length - 1], p = t.data;
  const seen = new Uint8Array(h * w), boxes = [];
  for (let start = 0; start < h * w; start++) {
    if (seen[start] || !(p[start] > 0.3)) continue;
    let x0 = w, y0 = h, x1 = -1, y1 = -1;
    const stack = [start];
    seen[start] = 1;
    while (stack.length) {
      const q = stack.pop(), y = Math.floor(q / w), x = q % w;
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
      for (let dy = -1; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++) {
          const ny = y + dy, nx = x + dx, r = ny * w + nx;
          if (ny >= 0 && ny < h && nx >= 0 && nx < w && !seen[r] && p[r] > 0.3) {
            seen[r] = 1;
            stack.push(r);
          }
        }
      }
    }
    const bw = x1 - x0 + 1, bh = y1 - y0 + 1;
    if (Math.min(bw, bh) < 3) continue;
    let sum = 0;
    for (let y = y0; y <= y1; y++) for (let x = x0; x <= x1; x++) sum += p[y * w + x];
    if (sum / (bw * bh) < 0.6) continue;
    const d = bw * bh * 1.5 / (2 * (bw + bh));
    if (Math.min(bw, bh) + 2 * d < 5) continue;
    const clip = (v, hi) => Math.min(Math.max(v, 0), hi);
    boxes.push([clip(x0 - d, w), clip(y0 - d, h), clip(x1 + 1 + d, w), clip(y1 + 1 + d, h)]);
  }
  return boxes;
}

function iou(a, b) {
  const iw = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
  const ih = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
  if (iw <= 0 || ih <= 0) return 0;
  const inter = iw * ih;
  return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter);
}

function matches(found, ref) {
  const pairs = [];
  found.forEach((f, i) => ref.forEach((r, j) => {
    const v = iou(f, r);
    if (v >= 0.5) pairs.push([v, i, j]);
  }));
  pairs.sort((a, b) => b[0] - a[0]);
  const uf = new Set(), ur = new Set();
  let n = 0;
  for (const [, i, j] of pairs) {
    if (uf.has(i) || ur.has(j)) continue;
    uf.add(i); ur.add(j); n++;
  }
  return n;
}

const ratio = (a, b) => (b === 0 ? 1 : a / b);
const hmean = (p, r) => (p + r === 0 ? 0 : 2 * p * r / (p + r));

async function main() {
  const args = process.argv.slice(2);
  if (args.length < 3) {
    console.error('usage: node scripts/ort_task_eval.js FLOAT.onnx QDQ.onnx SAMPLE_DIR --task ' +
                  'ctc|classify|detect-db [--labels FILE.json] [--threads N]');
    process.exit(2);
  }
  const [floatModel, qdqModel, dir] = args;
  let task = 'ctc', labels = null, threads = 0;
  for (let i = 3; i < args.length; i++) {
    if (args[i] === '--task') task = args[++i];
    else if (args[i] === '--labels') labels = JSON.parse(fs.readFileSync(args[++i], 'utf8'));
    else if (args[i] === '--threads') threads = Number(args[++i]);
    else { console.error(`ort_task_eval: unknown argument ${args[i]}`); process.exit(2); }
  }
  const ort = loadOrt();
  const options = {graphOptimizationLevel: 'all', executionMode: 'sequential'};
  if (threads > 0) { options.intraOpNumThreads = threads; options.interOpNumThreads = 1; }
  const fsess = await ort.InferenceSession.create(floatModel, options);
  const qsess = await ort.InferenceSession.create(qdqModel, options);
  const input = fsess.inputNames[0], output = fsess.outputNames[0];
  const files = fs.readdirSync(dir).filter(f => f.endsWith(`.${input}.npy`)).sort();
  const t = {items: 0, equal: 0, edits: 0, chars: 0, fb: 0, qb: 0, matched: 0, gt: 0, fgt: 0,
             qgt: 0, fbl: 0, qbl: 0, fc: 0, qc: 0, labelled: 0};
  for (const file of files) {
    const id = file.slice(0, -(`.${input}.npy`.length));
    const feed = {[input]: toOrtTensor(ort, path.join(dir, file))};
    const f = (await fsess.run(feed))[output], q = (await qsess.run(feed))[output];
    const label = labels ? labels[id] : undefined;
    t.items++;
    if (task === 'ctc') {
      const sf = ctcDecode(f), sq = ctcDecode(q);
      t.equal += sf.join() === sq.join() ? 1 : 0;
      t.edits += editDistance(sf, sq);
      t.chars += sf.length;
    } else if (task === 'classify') {
      const c = f.dims[f.dims.length - 1], tf = argmax(f.data, 0, c), tq = argmax(q.data, 0, c);
      t.equal += tf === tq ? 1 : 0;
      if (label !== undefined) { t.labelled++; t.fc += tf === label; t.qc += tq === label; }
    } else {
      const fb = dbBoxes(f), qb = dbBoxes(q);
      t.fb += fb.length; t.qb += qb.length; t.matched += matches(qb, fb);
      if (label !== undefined) {
        t.labelled++; t.gt += label.length; t.fbl += fb.length; t.qbl += qb.length;
        t.fgt += matches(fb, label); t.qgt += matches(qb, label);
      }
    }
  }
  const doc = {task, samples: t.items, float_model: floatModel, qdq_model: qdqModel};
  if (task === 'ctc') {
    doc.seq = t.equal / t.items;
    doc.char = 1 - t.edits / Math.max(t.chars, 1);
  } else if (task === 'classify') {
    doc.top1 = t.equal / t.items;
    if (t.labelled) { doc.float_accuracy = t.fc / t.labelled; doc.qdq_accuracy = t.qc / t.labelled; }
  } else {
    doc.hmean = hmean(ratio(t.matched, t.qb), ratio(t.matched, t.fb));
    doc.float_boxes = t.fb; doc.qdq_boxes = t.qb;
    if (t.labelled) {
      doc.float_gt_hmean = hmean(ratio(t.fgt, t.fbl), ratio(t.fgt, t.gt));
      doc.qdq_gt_hmean = hmean(ratio(t.qgt, t.qbl), ratio(t.qgt, t.gt));
    }
  }
  console.log(JSON.stringify(doc, null, 2));
}

main().catch(e => { console.error(`ort_task_eval: ${e.message}`); process.exit(3); });
