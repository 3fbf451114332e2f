#!/usr/bin/env node
'use strict';
// Runs an ONNX model with ONNX Runtime (npm onnxruntime-node, CPU) on the
// arrays of an .npz file and writes the outputs by name: the float reference
// for `tpuc run` / `tpuc compare`.
//
//   node scripts/ort_run.js model.onnx in.npz out.npz [options]
//     --threads N       intra-op threads (default: ONNX Runtime's choice)
//     --opt LEVEL       graph optimisation: disabled|basic|extended|all (default all)
//     --repeat N        time N runs after --warmup runs and print a JSON line
//                       {"model", "runs", "threads", "median_ms", "min_ms", "mean_ms",
//                        "cpu_ms" (process CPU time per run, all threads), "load_ms"}
//     --warmup N        untimed runs before timing (default 1 when --repeat is given)
//     --per-sample      every input holds B samples along axis 0: run the model
//                       once per sample (each input cut to its sample, batch 1)
//                       and write the outputs stacked along axis 0 (for models
//                       with a fixed batch of 1, e.g. the openWakeWord heads)
//
// Inputs are matched by name (the npz key); float64 arrays are converted to
// float32 for float inputs. Exit status 1 with a message on any error, and
// no output file is left behind.

const path = require('path');
const {performance} = require('perf_hooks');
const npz = require('./lib/npz.js');

function usage(message) {
  if (message) process.stderr.write(`ort_run: error: ${message}\n`);
  process.stderr.write(
    'usage: node scripts/ort_run.js model.onnx in.npz out.npz [--threads N] ' +
    '[--opt disabled|basic|extended|all] [--repeat N] [--warmup N] [--per-sample]\n');
  process.exit(message ? 1 : 0);
}

function parseArgs(argv) {
  const opts = {positional: [], threads: 0, opt: 'all', repeat: 0, warmup: -1, perSample: false};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    const count = name => {
      const v = Number(value());
      if (!Number.isInteger(v) || v < 0) usage(`${name} needs a non-negative integer`);
      return v;
    };
    if (a === '-h' || a === '--help') usage();
    else if (a === '--threads') opts.threads = count(a);
    else if (a === '--opt') opts.opt = value();
    else if (a === '--repeat') opts.repeat = count(a);
    else if (a === '--warmup') opts.warmup = count(a);
    else if (a === '--per-sample') opts.perSample = true;
    else if (a.startsWith('-')) usage(`unknown option ${a}`);
    else opts.positional.push(a);
  }
  if (opts.positional.length !== 3) usage('expected model.onnx in.npz out.npz');
  if (!['disabled', 'basic', 'extended', 'all'].includes(opts.opt))
    usage(`bad --opt '${opts.opt}'`);
  if (opts.warmup < 0) opts.warmup = opts.repeat > 0 ? 1 : 0;
  return opts;
}

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    throw new Error('onnxruntime-node is not installed: run scripts/setup_node.sh (' +
                    e.message.split('\n')[0] + ')');
  }
}

function toOrtTensor(ort, name, arr) {
  let {dtype, data} = arr;
  if (dtype === 'f8') {
    data = Float32Array.from(data);
    dtype = 'f4';
  }
  const type = npz.DESCR_TO_ORT[dtype];
  if (!type) throw new Error(`input '${name}': unsupported dtype ${dtype}`);
  return new ort.Tensor(type, data, arr.shape);
}

function fromOrtTensor(name, t) {
  const dtype = npz.ORT_TO_DESCR[t.type];
  if (!dtype) throw new Error(`output '${name}': unsupported type ${t.type}`);
  return {dtype, shape: t.dims.map(Number), data: t.data};
}

// --per-sample: sample b of every input (axis 0) through the model alone,
// the outputs of all samples concatenated along axis 0.
async function runPerSample(ort, session, inputs, inPath, outPath) {
  let count = -1;
  for (const name of session.inputNames) {
    const arr = inputs.get(name);
    if (arr.shape.length === 0) throw new Error(`--per-sample: input '${name}' is a scalar`);
    if (count >= 0 && arr.shape[0] !== count)
      throw new Error(`--per-sample: the inputs of ${inPath} differ in their first dimension ` +
                      `(${count} and ${arr.shape[0]} for '${name}')`);
    count = arr.shape[0];
  }
  const parts = new Map(session.outputNames.map(n => [n, []]));
  for (let b = 0; b < count; b++) {
    const feeds = {};
    for (const name of session.inputNames) {
      const arr = inputs.get(name);
      const size = arr.shape.slice(1).reduce((x, y) => x * y, 1);
      feeds[name] = toOrtTensor(ort, name, {dtype: arr.dtype, shape: [1, ...arr.shape.slice(1)],
                                            data: arr.data.subarray(b * size, (b + 1) * size)});
    }
    const results = await session.run(feeds);
    for (const name of session.outputNames) parts.get(name).push(fromOrtTensor(name, results[name]));
  }
  const outputs = new Map();
  for (const [name, list] of parts) {
    const first = list[0];
    const data = new first.data.constructor(list.reduce((n, t) => n + t.data.length, 0));
    let at = 0;
    for (const t of list) {
      data.set(t.data, at);
      at += t.data.length;
    }
    outputs.set(name, {dtype: first.dtype, shape: [list.reduce((n, t) => n + t.shape[0], 0),
                                                   ...first.shape.slice(1)], data});
  }
  npz.writeNpz(outPath, outputs);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const [modelPath, inPath, outPath] = opts.positional;
  const ort = loadOrt();
  const inputs = npz.readNpz(inPath);
  const sessionOptions = {graphOptimizationLevel: opts.opt};
  if (opts.threads > 0) {
    sessionOptions.intraOpNumThreads = opts.threads;
    sessionOptions.interOpNumThreads = 1;
  }
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(modelPath, sessionOptions);
  const loadMs = performance.now() - t0;
  const feeds = {};
  for (const name of session.inputNames) {
    if (!inputs.has(name))
      throw new Error(`input '${name}' of ${path.basename(modelPath)} is not in ${inPath} ` +
                      `(it has: ${[...inputs.keys()].join(', ')})`);
    feeds[name] = toOrtTensor(ort, name, inputs.get(name));
  }
  for (const name of inputs.keys())
    if (!session.inputNames.includes(name))
      process.stderr.write(`ort_run: warning: '${name}' in ${inPath} is not a model input\n`);

  if (opts.perSample) {
    if (opts.repeat > 0) usage('--per-sample and --repeat exclude each other');
    await runPerSample(ort, session, inputs, inPath, outPath);
    return;
  }
  for (let i = 0; i < opts.warmup; i++) await session.run(feeds);
  const times = [];
  let results = null;
  const runs = Math.max(1, opts.repeat);
  const cpuStart = process.cpuUsage();
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    results = await session.run(feeds);
    times.push(performance.now() - start);
  }
  const cpu = process.cpuUsage(cpuStart);
  const microsPerMs = 1000;
  const cpuMs = (cpu.user + cpu.system) / microsPerMs / runs;
  const outputs = new Map();
  for (const name of session.outputNames) outputs.set(name, fromOrtTensor(name, results[name]));
  npz.writeNpz(outPath, outputs);
  if (opts.repeat > 0) {
    times.sort((a, b) => a - b);
    const mid = Math.floor(times.length / 2);
    const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    process.stdout.write(JSON.stringify({
      model: path.basename(modelPath), runs: times.length, threads: opts.threads || 'default',
      median_ms: +median.toFixed(3), min_ms: +times[0].toFixed(3), mean_ms: +mean.toFixed(3),
      cpu_ms: +cpuMs.toFixed(3), load_ms: +loadMs.toFixed(3),
    }) + '\n');
  }
}

main().catch(e => {
  process.stderr.write(`ort_run: error: ${e.message}\n`);
  process.exit(1);
});
