// Node BullMQ peer of drover's side-by-side benchmark. Same flags, scenarios
// and JSON result line as the Go peer (bench/cmd/peer/main.go documents them);
// started once per scenario, run and implementation by bench/cmd/compare.
import { FlowProducer, Queue, Worker } from 'bullmq';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';

const { values: flags } = parseArgs({
  options: {
    impl: { type: 'string', default: 'bullmq' },
    scenario: { type: 'string' },
    n: { type: 'string', default: '5000' },
    c: { type: 'string', default: '10' },
    producers: { type: 'string', default: '8' },
    chunk: { type: 'string', default: '1000' },
    attempts: { type: 'string', default: '1' },
    redis: { type: 'string', default: '127.0.0.1:6379' },
    'gap-ms': { type: 'string', default: '5' },
    'lead-ms': { type: 'string', default: '500' },
    'spread-ms': { type: 'string', default: '2000' },
    'warmup-ms': { type: 'string', default: '1000' },
    'timeout-s': { type: 'string', default: '240' },
    'payload-kb': { type: 'string', default: '0' },
    backoff: { type: 'string', default: 'fixed' },
    dup: { type: 'string', default: '1' },
    ids: { type: 'string', default: 'false' },
    'remove-on-complete': { type: 'string', default: 'false' },
    children: { type: 'string', default: '100' },
    'every-ms': { type: 'string', default: '100' },
    // accepted for flag compatibility with the Go peer, unused here (the
    // process scenario always ends at the n-th completion)
    'stop-at-handled': { type: 'string' },
    'drover-bin': { type: 'string' },
    pg: { type: 'string' },
    'pg-max-conns': { type: 'string' },
    'river-poll': { type: 'string' },
  },
  strict: true,
});

const cfg = {
  scenario: flags.scenario,
  n: Number(flags.n),
  c: Number(flags.c),
  producers: Number(flags.producers),
  chunk: Number(flags.chunk),
  attempts: Number(flags.attempts),
  gapMs: Number(flags['gap-ms']),
  leadMs: Number(flags['lead-ms']),
  spreadMs: Number(flags['spread-ms']),
  warmupMs: Number(flags['warmup-ms']),
  timeoutMs: Number(flags['timeout-s']) * 1000,
  payloadKB: Number(flags['payload-kb']),
  backoff: flags.backoff,
  dup: Number(flags.dup),
  ids: flags.ids === 'true',
  removeOnComplete: flags['remove-on-complete'] === 'true',
  children: Number(flags.children),
  everyMs: Number(flags['every-ms']),
};
const PAD = cfg.payloadKB > 0 ? 'x'.repeat(cfg.payloadKB * 1024) : undefined;
const [host, port] = flags.redis.split(':');
const connection = { host, port: Number(port), maxRetriesPerRequest: null };
const QUEUE = 'bench';
const PREFIX = 'bull';
const PLANNED = 'planned failure';

// wall clock in ms with sub-ms resolution
const wallMs = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const rssKB = () => {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : Math.round(process.memoryUsage().rss / 1024);
};

function jobOpts(j) {
  const o = {};
  if (cfg.attempts > 1) {
    o.attempts = cfg.attempts;
    o.backoff = { type: 'fixed', delay: 0 };
    // "exp": 5 ms doubling, 50 % jitter, as the Go peer's expDelay
    if (cfg.backoff === 'exp') o.backoff = { type: 'exponential', delay: 5, jitter: 0.5 };
  }
  if (j.delay !== undefined) o.delay = j.delay;
  if (cfg.dup > 1) o.deduplication = { id: `d${j.i}` };
  if (cfg.ids) o.jobId = `o${j.i}`;
  if (cfg.removeOnComplete) o.removeOnComplete = true;
  return o;
}

// job i of a scenario: with --dup every id repeats dup times
function spec(i) {
  return { i: cfg.dup > 1 ? Math.floor(i / cfg.dup) : i };
}

function data(j) {
  const d = j.at !== undefined ? { i: j.i, at: j.at } : { i: j.i };
  if (PAD !== undefined) d.p = PAD;
  return d;
}

async function addSingle(queue, n, producers) {
  let next = 0;
  const producer = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const j = spec(i);
      await queue.add(QUEUE, data(j), jobOpts(j));
    }
  };
  await Promise.all(Array.from({ length: producers }, producer));
}

async function addBulk(queue, n, chunk) {
  for (let i = 0; i < n; i += chunk) {
    const jobs = [];
    for (let k = i; k < Math.min(i + chunk, n); k++) {
      const j = spec(k);
      jobs.push({ name: QUEUE, data: data(j), opts: jobOpts(j) });
    }
    await queue.addBulk(jobs);
  }
}

function rateResult(n, ms, cpu) {
  return { seconds: ms / 1000, rate: n / (ms / 1000), cpu_us: cpu, rss_kb: rssKB() };
}

function percentiles(vs) {
  const s = [...vs].sort((a, b) => a - b);
  const rank = (p) => s[Math.max(0, Math.min(Math.ceil(p * s.length) - 1, s.length - 1))];
  return { p50_ms: rank(0.5), p99_ms: rank(0.99), max_ms: s[s.length - 1] };
}

// withTimeout rejects with what() + ' before the timeout' after --timeout-s.
function withTimeout(promise, what) {
  let t;
  const timeout = new Promise((_, reject) => {
    t = setTimeout(() => reject(new Error(`${what()} before the timeout`)), cfg.timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(t));
}

// newWorker builds a (not yet running) worker; done resolves after the
// count-th 'completed' event, i.e. once BullMQ has written the completion.
function newWorker(processor, count = cfg.n) {
  const worker = new Worker(QUEUE, processor, {
    connection,
    prefix: PREFIX,
    concurrency: cfg.c,
    autorun: false,
  });
  let completed = 0;
  let resolve;
  const done = new Promise((r) => (resolve = r));
  worker.on('completed', () => {
    if (++completed === count) resolve();
  });
  worker.on('error', (err) => console.error('worker error:', err));
  worker.on('failed', (job, err) => {
    if (err && err.message !== PLANNED) console.error('job failed:', err);
  });
  return { worker, done, completedCount: () => completed };
}

async function scenarioProcess() {
  const retry = cfg.scenario === 'retry';
  let first = 0;
  const { worker, done, completedCount } = newWorker(async (job) => {
    if (first === 0) first = performance.now();
    if (retry && job.attemptsMade + 1 < cfg.attempts) throw new Error(PLANNED);
  });
  await worker.waitUntilReady();
  const cpu0 = cpuMicros();
  const t0 = performance.now();
  worker.run();
  await withTimeout(done, () => `only ${completedCount()} of ${cfg.n} jobs completed`);
  const res = rateResult(cfg.n, performance.now() - t0, cpuMicros() - cpu0);
  res.first_ms = first - t0;
  await worker.close();
  return res;
}

async function scenarioLatency(queue) {
  const sent = new Float64Array(cfg.n);
  const lat = new Float64Array(cfg.n);
  const { worker, done } = newWorker(async (job) => {
    const i = job.data.i;
    lat[i] = performance.now() - sent[i];
  });
  await worker.waitUntilReady();
  worker.run();
  await sleep(cfg.warmupMs);
  const cpu0 = cpuMicros();
  const t0 = performance.now();
  for (let i = 0; i < cfg.n; i++) {
    sent[i] = performance.now();
    await queue.add(QUEUE, { i });
    await sleep(cfg.gapMs * (0.5 + Math.random()));
  }
  await withTimeout(done, () => 'not all jobs completed');
  const res = { ...rateResult(cfg.n, performance.now() - t0, cpuMicros() - cpu0), ...percentiles(lat) };
  await worker.close();
  return res;
}

async function scenarioDelayed(queue) {
  const late = new Float64Array(cfg.n);
  const { worker, done } = newWorker(async (job) => {
    late[job.data.i] = wallMs() - job.data.at / 1000;
  });
  await worker.waitUntilReady();
  worker.run();
  await sleep(cfg.warmupMs);
  const cpu0 = cpuMicros();
  const t0 = performance.now();
  for (let i = 0; i < cfg.n; i++) {
    const delay = cfg.leadMs + (cfg.spreadMs * i) / cfg.n;
    const at = Math.round((wallMs() + delay) * 1000); // Unix µs, as the Go peer
    await queue.add(QUEUE, { i, at }, { delay: Math.round(delay) });
  }
  await withTimeout(done, () => 'not all jobs completed');
  const res = { ...rateResult(cfg.n, performance.now() - t0, cpuMicros() - cpu0), ...percentiles(late) };
  await worker.close();
  return res;
}

async function scenarioMem() {
  let inflight = 0;
  let allIn;
  const allInP = new Promise((r) => (allIn = r));
  let release;
  const releaseP = new Promise((r) => (release = r));
  const { worker, done } = newWorker(async () => {
    if (++inflight === cfg.n) allIn();
    await releaseP;
  });
  await worker.waitUntilReady();
  const cpu0 = cpuMicros();
  const t0 = performance.now();
  worker.run();
  let timer;
  await Promise.race([allInP, new Promise((r) => (timer = setTimeout(r, cfg.timeoutMs / 2)))]);
  clearTimeout(timer);
  const res = { seconds: (performance.now() - t0) / 1000, rss_kb: rssKB(), inflight };
  if (inflight < cfg.n) res.note = `only ${inflight} of ${cfg.n} jobs were in flight at once`;
  release();
  await withTimeout(done, () => 'not all jobs completed');
  res.cpu_us = cpuMicros() - cpu0;
  await worker.close();
  return res;
}

// flow: a worker at --c, then --n flows (a parent with --children children,
// added one FlowProducer.add each from one producer); done once every job
// completed. Rate is flows per second, adding included.
async function scenarioFlow() {
  const flows = new FlowProducer({ connection, prefix: PREFIX });
  const { worker, done, completedCount } = newWorker(async () => {}, cfg.n * (cfg.children + 1));
  await worker.waitUntilReady();
  const cpu0 = cpuMicros();
  const t0 = performance.now();
  worker.run();
  for (let k = 0; k < cfg.n; k++) {
    const children = [];
    for (let c = 0; c < cfg.children; c++) children.push({ name: QUEUE, queueName: QUEUE, data: { i: k * cfg.children + c } });
    await flows.add({ name: 'parent', queueName: QUEUE, data: { i: -(k + 1) }, children });
  }
  await withTimeout(done, () => `only ${completedCount()} of ${cfg.n * (cfg.children + 1)} jobs completed`);
  const res = rateResult(cfg.n, performance.now() - t0, cpuMicros() - cpu0);
  await worker.close();
  await flows.close();
  return res;
}

// scheduler: one job scheduler every --every-ms until --n runs started, then
// removed; lateness = processor start - the run's due time, which is the
// last part of its job id (repeat:<scheduler id>:<due ms>).
async function scenarioScheduler(queue) {
  const late = [];
  let resolve;
  const all = new Promise((r) => (resolve = r));
  const worker = new Worker(
    QUEUE,
    async (job) => {
      const now = wallMs();
      if (late.length < cfg.n) {
        late.push(now - Number(job.id.slice(job.id.lastIndexOf(':') + 1)));
        if (late.length === cfg.n) resolve();
      }
    },
    { connection, prefix: PREFIX, concurrency: 1 },
  );
  worker.on('error', (err) => console.error('worker error:', err));
  await worker.waitUntilReady();
  const cpu0 = cpuMicros();
  const t0 = performance.now();
  await queue.upsertJobScheduler('bench-scheduler', { every: cfg.everyMs }, { name: QUEUE, data: {} });
  await withTimeout(all, () => `only ${late.length} of ${cfg.n} scheduler runs`);
  await queue.removeJobScheduler('bench-scheduler');
  const res = { ...rateResult(cfg.n, performance.now() - t0, cpuMicros() - cpu0), ...percentiles(late) };
  await worker.close();
  return res;
}

async function main() {
  const queue = new Queue(QUEUE, { connection, prefix: PREFIX });
  await queue.waitUntilReady();
  try {
    switch (cfg.scenario) {
      case 'seed': {
        const t0 = performance.now();
        await addBulk(queue, cfg.n, cfg.chunk);
        return rateResult(cfg.n, performance.now() - t0, 0);
      }
      case 'add_single': {
        const cpu0 = cpuMicros();
        const t0 = performance.now();
        await addSingle(queue, cfg.n, cfg.producers);
        return rateResult(cfg.n, performance.now() - t0, cpuMicros() - cpu0);
      }
      case 'add_bulk': {
        const cpu0 = cpuMicros();
        const t0 = performance.now();
        await addBulk(queue, cfg.n, cfg.chunk);
        return rateResult(cfg.n, performance.now() - t0, cpuMicros() - cpu0);
      }
      case 'process':
      case 'retry':
        return await scenarioProcess();
      case 'latency':
        return await scenarioLatency(queue);
      case 'delayed':
        return await scenarioDelayed(queue);
      case 'mem':
        return await scenarioMem();
      case 'flow':
        return await scenarioFlow();
      case 'scheduler':
        return await scenarioScheduler(queue);
      default:
        throw new Error(`unknown --scenario ${cfg.scenario}`);
    }
  } finally {
    await queue.close();
  }
}

const base = { impl: 'bullmq', scenario: cfg.scenario, n: cfg.n };
const fail = (err) => {
  console.error(err);
  process.stdout.write(JSON.stringify({ ...base, seconds: 0, cpu_us: 0, rss_kb: 0, error: String(err.message || err) }) + '\n');
  process.exit(1);
};
// A peer never outlives --timeout-s, even when Redis is unreachable (ioredis
// reconnects forever) or a close hangs.
setTimeout(() => fail(new Error('peer timed out')), cfg.timeoutMs + 5000).unref();
main().then(
  (res) => {
    process.stdout.write(JSON.stringify({ ...base, ...res }) + '\n');
    process.exit(0);
  },
  fail,
);
