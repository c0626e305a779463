// drover BullMQ oracle driver: a long-running process that performs BullMQ
// operations on request.
//
// Usage: node driver.mjs --redis host:port [--cluster] [--skip-metas-update]
//
// With --cluster, host:port is a seed node of a Redis Cluster and every
// connection is an ioredis Cluster client.
//
// Protocol: newline-delimited JSON. Each stdin line is a request
// {"id":n,"cmd":"...", ...args} (a job id argument is named "jobId"); each
// gets exactly one stdout line
// {"id":n,"ok":true,"result":...} or {"id":n,"ok":false,"error":"...","errorName":"..."}.
// Requests run concurrently; responses may come out of order. The process
// closes everything and exits when stdin ends.

import { Queue, QueueEvents, Job, FlowProducer, Worker } from 'bullmq';
import { createInterface } from 'node:readline';
import { consoleToStderr, redisConnector, hasFlag, newWorker, watchWorker, jobView, runBehavior, backoffStrategies } from './lib.mjs';
import { featureCommands, closeManualWorkers } from './features.mjs';
import { telemetryCommands, closeTelemetry } from './telemetry.mjs';

consoleToStderr();

const connector = redisConnector(process.argv);
const skipMetasUpdate = hasFlag(process.argv, '--skip-metas-update');

// One ioredis connection per role. Workers and QueueEvents duplicate theirs
// for blocking commands (BullMQ does that itself for Workers).
const conns = {
  queue: connector.make(),
  worker: connector.make(),
};
for (const c of Object.values(conns)) {
  c.on('error', (err) => console.error('oracle redis error:', err.message));
}

const queues = new Map(); // prefix\0queue -> Promise<Queue>
const queueEvents = new Map(); // prefix\0queue -> {qe, events, waiters}
const workers = new Map(); // workerId -> {worker, events, waiters}
const stepWorkers = new Map(); // prefix\0queue -> Promise<{worker, behavior, n}>

const qkey = (prefix, queue) => `${prefix}\u0000${queue}`;

function need(args, ...names) {
  for (const n of names) {
    if (args[n] === undefined || args[n] === null) {
      throw new Error(`oracle: missing argument ${n}`);
    }
  }
}

async function getQueue(args) {
  need(args, 'prefix', 'queue');
  const k = qkey(args.prefix, args.queue);
  let p = queues.get(k);
  if (!p) {
    p = (async () => {
      // defaultJobOptions (and eventsMaxLen) count only on the call that opens the queue
      // (openQueue): later calls share the Queue as it was made.
      const opts = { connection: conns.queue, prefix: args.prefix, skipMetasUpdate };
      if (args.defaultJobOptions) {
        opts.defaultJobOptions = args.defaultJobOptions;
      }
      if (args.eventsMaxLen) {
        opts.streams = { events: { maxLen: args.eventsMaxLen } };
      }
      const q = new Queue(args.queue, opts);
      q.on('error', (err) => console.error(`oracle queue ${args.queue} error:`, err.message));
      await q.waitUntilReady();
      // The constructor writes meta (version, opts.maxLenEvents) in the
      // background; wait for it so the Redis state is settled.
      await q.queueMetaInitialized;
      return q;
    })();
    queues.set(k, p);
    p.catch(() => queues.delete(k));
  }
  return p;
}

async function getJobOrThrow(q, id) {
  const job = await Job.fromId(q, String(id));
  if (!job) {
    throw new Error(`oracle: job ${id} not found in ${q.name}`);
  }
  return job;
}

// A list of recorded events plus waiters resolved when enough match.
function recorder() {
  const r = { events: [], waiters: [] };
  r.push = (e) => {
    r.events.push(e);
    r.waiters = r.waiters.filter((w) => !w.check());
  };
  r.wait = (match, count, timeoutMs) =>
    new Promise((resolve, reject) => {
      const w = {};
      w.check = () => {
        const got = r.events.filter(match);
        if (got.length >= count) {
          clearTimeout(w.timer);
          resolve(got);
          return true;
        }
        return false;
      };
      if (w.check()) {
        return;
      }
      w.timer = setTimeout(() => {
        r.waiters = r.waiters.filter((x) => x !== w);
        const got = r.events.filter(match);
        reject(new Error(`oracle: timed out after ${timeoutMs}ms waiting for ${count} events, got ${got.length}: ${JSON.stringify(r.events.slice(-20))}`));
      }, timeoutMs);
      r.waiters.push(w);
    });
  return r;
}

async function lastStreamId(prefix, queue) {
  const key = `${prefix}:${queue}:events`;
  const last = await conns.queue.xrevrange(key, '+', '-', 'COUNT', 1);
  return last.length > 0 ? last[0][0] : '0-0';
}

async function getQueueEvents(args) {
  need(args, 'prefix', 'queue');
  const k = qkey(args.prefix, args.queue);
  let p = queueEvents.get(k);
  if (!p) {
    p = (async () => {
      // Start reading right after the newest existing entry, so nothing
      // written after this call is missed even before XREAD blocks.
      const lastEventId = args.lastEventId ?? (await lastStreamId(args.prefix, args.queue));
      const rec = recorder();
      const qe = new QueueEvents(args.queue, {
        // BullMQ duplicates a client instance for this blocking reader.
        connection: connector.cluster ? conns.queue : { ...connector.options },
        prefix: args.prefix,
        lastEventId,
        blockingTimeout: 1000,
      });
      const origEmit = qe.emit.bind(qe);
      let last;
      qe.emit = (event, ...rest) => {
        // QueueEvents emits "<event>" and then, for entries with a jobId,
        // "<event>:<jobId>" with the same fields; only the first is recorded.
        // 'drained' is emitted as (event, streamId), the rest as (event, fields, streamId).
        let e;
        if (event === 'error') {
          e = { name: 'error', fields: { message: rest[0]?.message ?? String(rest[0]) } };
        } else if (rest.length === 1 && typeof rest[0] === 'string') {
          e = { name: event, id: rest[0], fields: {} };
        } else if (rest.length === 2 && typeof rest[1] === 'string') {
          const dup = last && last.id === rest[1] && event === `${last.name}:${rest[0]?.jobId}`;
          if (!dup) {
            e = { name: event, id: rest[1], fields: rest[0] ?? {} };
          }
        }
        if (e) {
          last = e;
          rec.push(e);
        }
        return origEmit(event, ...rest);
      };
      qe.on('error', () => {});
      await qe.waitUntilReady();
      return { qe, rec };
    })();
    queueEvents.set(k, p);
    p.catch(() => queueEvents.delete(k));
  }
  return p;
}

// finishGap waits until the clock's millisecond has changed twice: a step's
// second finish then never shares the first one's finishedOn, whose ties
// the completed and failed sets order by member (and count retention trims
// by that order), which would make a program's state depend on speed.
function finishGap() {
  return new Promise((resolve) => setTimeout(resolve, 2));
}

// getStepWorker returns the queue's step worker: a BullMQ Worker that never
// runs on its own (autorun false) and that the step commands drive one job
// at a time. Its processor runs the behavior of the current step.
async function getStepWorker(args) {
  need(args, 'prefix', 'queue');
  const k = qkey(args.prefix, args.queue);
  let p = stepWorkers.get(k);
  if (!p) {
    p = (async () => {
      const sw = { behavior: { kind: 'return' }, n: 0 };
      sw.worker = new Worker(args.queue, (job, token) => runBehavior(sw.behavior, job, token), {
        connection: conns.worker,
        prefix: args.prefix,
        autorun: false,
        name: args.workerName ?? 'w',
        lockDuration: args.lockDuration ?? 30000,
        stalledInterval: args.stalledInterval ?? 30000,
        maxStalledCount: args.maxStalledCount ?? 1,
        settings: { backoffStrategy: backoffStrategies.byType },
      });
      sw.worker.on('error', (err) => console.error(`oracle step worker ${args.queue} error:`, err.message));
      await sw.worker.waitUntilReady();
      return sw;
    })();
    stepWorkers.set(k, p);
    p.catch(() => stepWorkers.delete(k));
  }
  return p;
}

function getWorker(args) {
  need(args, 'workerId');
  const w = workers.get(args.workerId);
  if (!w) {
    throw new Error(`oracle: no worker ${args.workerId}`);
  }
  return w;
}

async function closeAll() {
  const tasks = [];
  for (const w of workers.values()) {
    if (w.running) {
      w.running = false;
      tasks.push(w.worker.close(true).catch(() => {}));
    }
  }
  workers.clear();
  for (const p of queueEvents.values()) {
    tasks.push(p.then(({ qe }) => qe.close()).catch(() => {}));
  }
  queueEvents.clear();
  tasks.push(closeTelemetry());
  tasks.push(closeManualWorkers());
  for (const p of stepWorkers.values()) {
    tasks.push(p.then(({ worker }) => worker.close(true)).catch(() => {}));
  }
  stepWorkers.clear();
  await Promise.all(tasks);
  const qs = [];
  for (const p of queues.values()) {
    qs.push(p.then((q) => q.close()).catch(() => {}));
  }
  queues.clear();
  await Promise.all(qs);
}

const commands = {
  ping: async () => 'pong',
  version: async () => {
    const { createRequire } = await import('node:module');
    return createRequire(import.meta.url)('bullmq/package.json').version;
  },

  // openQueue opens the queue's Queue with a.defaultJobOptions, before
  // any other call of that prefix and queue.
  openQueue: async (a) => {
    need(a, 'prefix', 'queue');
    if (queues.has(qkey(a.prefix, a.queue))) {
      throw new Error(`oracle: queue ${a.prefix}:${a.queue} is already open`);
    }
    await getQueue(a);
    return null;
  },
  add: async (a) => {
    const q = await getQueue(a);
    const job = await q.add(a.name, a.data, a.opts ?? {});
    return job.id;
  },
  addBulk: async (a) => {
    const q = await getQueue(a);
    const jobs = await q.addBulk((a.jobs ?? []).map((j) => ({ name: j.name, data: j.data, opts: j.opts ?? {} })));
    // A job id is a string; BullMQ hands back a script error code (a
    // number, e.g. -5 for a missing parent) as the id of a job it did not add.
    return jobs.map((j) => String(j.id));
  },
  // addFlow adds a parent with children (FlowProducer.add); a.flow is
  // {name, queueName, data, opts, children: [...]}. Returns the ids as a tree
  // {id, children: [...]}.
  addFlow: async (a) => {
    need(a, 'prefix', 'flow');
    const fp = new FlowProducer({ connection: conns.queue, prefix: a.prefix });
    try {
      // a.opts: FlowProducer.add's options (queuesOptions).
      const node = await fp.add(a.flow, a.opts ?? undefined);
      const ids = (n) => ({ id: n.job.id, children: (n.children ?? []).map(ids) });
      return ids(node);
    } finally {
      await fp.close();
    }
  },
  // addFlows adds the trees a.flows in one call (FlowProducer.addBulk) and
  // returns their ids as addFlow does, one tree each.
  addFlows: async (a) => {
    need(a, 'prefix', 'flows');
    const fp = new FlowProducer({ connection: conns.queue, prefix: a.prefix });
    try {
      const nodes = await fp.addBulk(a.flows);
      const ids = (n) => ({ id: n.job.id, children: (n.children ?? []).map(ids) });
      return nodes.map(ids);
    } finally {
      await fp.close();
    }
  },
  // getFlow reads the tree under a.jobId in a.queue (FlowProducer.getFlow
  // with a.depth and a.maxChildren when given) as {id, queue, children}:
  // each node's job id and queue name, and null where getFlow has an
  // undefined entry (a missing job).
  getFlow: async (a) => {
    need(a, 'prefix', 'queue', 'jobId');
    const fp = new FlowProducer({ connection: conns.queue, prefix: a.prefix });
    try {
      const opts = { id: String(a.jobId), queueName: a.queue };
      if (a.depth) {
        opts.depth = a.depth;
      }
      if (a.maxChildren) {
        opts.maxChildren = a.maxChildren;
      }
      const view = (n) => (n ? { id: n.job.id, queue: n.job.queueName, children: (n.children ?? []).map(view) } : null);
      return view(await fp.getFlow(opts));
    } finally {
      await fp.close();
    }
  },
  getJob: async (a) => {
    need(a, 'jobId');
    const q = await getQueue(a);
    return jobView(await q.getJob(String(a.jobId)));
  },
  // getJobJSON returns a job as BullMQ's own JSON has it: JSON.stringify
  // of the Job that Queue.getJob returns (its toJSON), or null.
  getJobJSON: async (a) => {
    need(a, 'jobId');
    const q = await getQueue(a);
    const job = await q.getJob(String(a.jobId));
    return job ? JSON.parse(JSON.stringify(job)) : null;
  },
  getState: async (a) => {
    need(a, 'jobId');
    const q = await getQueue(a);
    return q.getJobState(String(a.jobId));
  },
  getJobCounts: async (a) => {
    const q = await getQueue(a);
    return q.getJobCounts(...(a.types ?? []));
  },
  getJobs: async (a) => {
    const q = await getQueue(a);
    const jobs = await q.getJobs(a.types ?? [], a.start ?? 0, a.end ?? -1, a.asc ?? false);
    // A job id is a string; BullMQ hands back a script error code (a
    // number, e.g. -5 for a missing parent) as the id of a job it did not add.
    return jobs.map((j) => String(j.id));
  },
  getRanges: async (a) => {
    const q = await getQueue(a);
    return q.getRanges(a.types ?? [], a.start ?? 0, a.end ?? -1, a.asc ?? false);
  },
  getMeta: async (a) => (await getQueue(a)).getMeta(),
  // getWorkers returns Queue.getWorkers(): CLIENT LIST entries as objects
  // (name is the queue's name, rawname the connection's).
  getWorkers: async (a) => (await getQueue(a)).getWorkers(),
  getWorkersCount: async (a) => (await getQueue(a)).getWorkersCount(),
  pause: async (a) => {
    await (await getQueue(a)).pause();
    return null;
  },
  resume: async (a) => {
    await (await getQueue(a)).resume();
    return null;
  },
  isPaused: async (a) => (await getQueue(a)).isPaused(),
  drain: async (a) => {
    await (await getQueue(a)).drain(!!a.delayed);
    return null;
  },
  obliterate: async (a) => {
    const opts = { force: !!a.force };
    if (typeof a.count === 'number' && a.count > 0) {
      opts.count = a.count; // jobs per script call
    }
    await (await getQueue(a)).obliterate(opts);
    return null;
  },
  promote: async (a) => {
    need(a, 'jobId');
    const job = await getJobOrThrow(await getQueue(a), a.jobId);
    await job.promote();
    return null;
  },
  retryJob: async (a) => {
    need(a, 'jobId');
    const job = await getJobOrThrow(await getQueue(a), a.jobId);
    await job.retry(a.state ?? 'failed', {
      resetAttemptsMade: !!a.resetAttemptsMade,
      resetAttemptsStarted: !!a.resetAttemptsStarted,
    });
    return null;
  },
  retryJobs: async (a) => {
    // Absent, 0 and "" mean Node's defaults. (Queue.retryJobs({count: 0})
    // would loop forever: the script reports the zero budget as exhausted.)
    const opts = {};
    for (const k of ['state', 'count', 'timestamp']) {
      if (a[k]) {
        opts[k] = a[k];
      }
    }
    await (await getQueue(a)).retryJobs(opts);
    return null;
  },
  promoteJobs: async (a) => {
    const opts = {};
    if (a.count) {
      opts.count = a.count;
    }
    await (await getQueue(a)).promoteJobs(opts);
    return null;
  },
  remove: async (a) => {
    need(a, 'jobId');
    return (await getQueue(a)).remove(String(a.jobId), { removeChildren: a.removeChildren ?? true });
  },
  changePriority: async (a) => {
    need(a, 'jobId');
    const job = await getJobOrThrow(await getQueue(a), a.jobId);
    await job.changePriority({ priority: a.priority ?? 0, lifo: !!a.lifo });
    return null;
  },
  changeDelay: async (a) => {
    need(a, 'jobId', 'delay');
    const job = await getJobOrThrow(await getQueue(a), a.jobId);
    await job.changeDelay(a.delay);
    return null;
  },
  clean: async (a) => (await getQueue(a)).clean(a.grace ?? 0, a.limit ?? 0, a.type ?? 'completed'),
  updateProgress: async (a) => {
    need(a, 'jobId');
    await (await getQueue(a)).updateJobProgress(String(a.jobId), a.value);
    return null;
  },
  updateData: async (a) => {
    need(a, 'jobId');
    const job = await getJobOrThrow(await getQueue(a), a.jobId);
    await job.updateData(a.value);
    return null;
  },
  log: async (a) => {
    need(a, 'jobId');
    // Job.log honours the job's keepLogs option, as a processor's job.log would.
    const job = await getJobOrThrow(await getQueue(a), a.jobId);
    return job.log(String(a.line ?? ''));
  },
  getJobLogs: async (a) => {
    need(a, 'jobId');
    return (await getQueue(a)).getJobLogs(String(a.jobId), a.start ?? 0, a.end ?? -1, a.asc ?? true);
  },
  waitUntilFinished: async (a) => {
    need(a, 'jobId');
    const q = await getQueue(a);
    const { qe } = await getQueueEvents(a);
    const job = await getJobOrThrow(q, a.jobId);
    try {
      const rv = await job.waitUntilFinished(qe, a.timeoutMs ?? 10000);
      return { state: 'completed', returnvalue: rv === undefined ? null : rv };
    } catch (err) {
      if (/timed out before finishing/.test(err.message)) {
        throw err;
      }
      return { state: 'failed', failedReason: err.message };
    }
  },
  setGlobalConcurrency: async (a) => {
    need(a, 'concurrency');
    await (await getQueue(a)).setGlobalConcurrency(a.concurrency);
    return null;
  },
  removeGlobalConcurrency: async (a) => {
    await (await getQueue(a)).removeGlobalConcurrency();
    return null;
  },
  setGlobalRateLimit: async (a) => {
    need(a, 'max', 'duration');
    await (await getQueue(a)).setGlobalRateLimit(a.max, a.duration);
    return null;
  },
  rateLimit: async (a) => {
    need(a, 'ms');
    await (await getQueue(a)).rateLimit(a.ms);
    return null;
  },
  getRateLimitTtl: async (a) => {
    // maxJobs absent: the call without it.
    const q = await getQueue(a);
    return a.maxJobs === undefined ? q.getRateLimitTtl() : q.getRateLimitTtl(a.maxJobs);
  },
  removeRateLimitKey: async (a) => (await getQueue(a)).removeRateLimitKey(),

  startWorker: async (a) => {
    need(a, 'prefix', 'queue', 'worker');
    const spec = a.worker;
    need(spec, 'workerId');
    if (workers.get(spec.workerId)?.running) {
      throw new Error(`oracle: worker ${spec.workerId} is already running`);
    }
    const worker = newWorker(spec, a.prefix, a.queue, conns.worker, { autorun: false });
    const rec = recorder();
    watchWorker(worker, rec.push);
    workers.set(spec.workerId, { worker, rec, running: true });
    await worker.waitUntilReady();
    worker.run().catch((err) => rec.push({ event: 'error', time: Date.now(), message: err?.message ?? String(err) }));
    return null;
  },
  stopWorker: async (a) => {
    // The worker's events stay readable after it stopped.
    const w = getWorker(a);
    w.running = false;
    await w.worker.close(!!a.force);
    return null;
  },
  // pauseWorker/resumeWorker/workerStatus: one worker's worker.pause(doNotWaitActive),
  // worker.resume(), and its isPaused()/isRunning().
  pauseWorker: async (a) => {
    await getWorker(a).worker.pause(!!a.doNotWaitActive);
    return null;
  },
  resumeWorker: async (a) => {
    await getWorker(a).worker.resume();
    return null;
  },
  workerStatus: async (a) => {
    const w = getWorker(a).worker;
    return { paused: w.isPaused(), running: w.isRunning() };
  },
  workerEvents: async (a) => getWorker(a).rec.events,
  waitWorkerEvents: async (a) => {
    const w = getWorker(a);
    const kinds = a.events ?? [];
    return w.rec.wait((e) => kinds.length === 0 || kinds.includes(e.event), a.count ?? 1, a.timeoutMs ?? 10000);
  },

  // stepWork takes the next ready job with the queue's step worker and
  // processes it with a.behavior, as Worker.processJob does, without
  // fetching a next job. Returns the job id, or null when none was ready.
  stepWork: async (a) => {
    const sw = await getStepWorker(a);
    const token = `${sw.worker.id}:${++sw.n}`;
    sw.worker.limitUntil = 0; // Redis decides each step (see steps.go)
    // The worker's options for this step only: its limiter (read by the
    // take and by a finish that fetches the next job), maxStartedAttempts
    // (read by processJob and the retry decision), metrics, and
    // removeOnComplete and removeOnFail (KeepJobs objects, for jobs without
    // their own), which moveToFinished reads when it writes the result.
    const o = sw.worker.opts;
    o.limiter = a.limiter ?? undefined;
    o.maxStartedAttempts = a.maxStartedAttempts ?? undefined;
    o.metrics = a.metrics ?? undefined;
    o.removeOnComplete = a.removeOnComplete ?? undefined;
    o.removeOnFail = a.removeOnFail ?? undefined;
    try {
      const job = await sw.worker.getNextJob(token, { block: false });
      if (!job) {
        return null;
      }
      sw.behavior = a.behavior ?? { kind: 'return' };
      if (a.batch > 1) {
        // A worker at concurrency a.batch whose jobs finish together
        // while more wait, as drover's worker writes them: up to a.batch
        // jobs taken, finished one call each in the order taken, the
        // last finish fetching the next job, and more taken for the freed
        // slots (up to a.batch in all, unless the rate limiter stopped
        // the worker); those run in the order taken, fetching none.
        // Result: "<ids taken> / <ids fetched>", each sorted.
        const taken = [[job, token]];
        while (taken.length < a.batch) {
          const tn = `${sw.worker.id}:${++sw.n}`;
          const jn = await sw.worker.getNextJob(tn, { block: false });
          if (!jn) {
            break;
          }
          taken.push([jn, tn]);
        }
        const fetched = [];
        // a.sameMs: the finishes share one clock reading, as drover's
        // one call stamps every job of the batch (finishedOn, the
        // finished set's score) with its own time.
        const realNow = Date.now;
        if (a.sameMs) {
          const t0 = realNow();
          Date.now = () => t0;
        }
        try {
          for (let i = 0; i < taken.length; i++) {
            const [j, t] = taken[i];
            if (i > 0 && !a.sameMs) {
              await finishGap();
            }
            const last = i === taken.length - 1;
            const next = await sw.worker.processJob(j, t, () => last);
            if (next) {
              fetched.push([next, t]);
            }
          }
        } finally {
          Date.now = realNow;
        }
        while (fetched.length < a.batch && !(sw.worker.limitUntil > Date.now())) {
          const tn = `${sw.worker.id}:${++sw.n}`;
          const jn = await sw.worker.getNextJob(tn, { block: false });
          if (!jn) {
            break;
          }
          fetched.push([jn, tn]);
        }
        for (const [j, t] of fetched) {
          await finishGap();
          await sw.worker.processJob(j, t, () => false);
        }
        const ids = (xs) => xs.map(([j]) => j.id).sort().join(' ');
        return `${ids(taken)} / ${ids(fetched)}`;
      }
      if (a.concurrency === 2) {
        // A worker at concurrency 2: a second take while the first job is
        // in flight; a job that must not run fails at once, the others
        // run in the order taken.
        // As drover's worker: it takes as many jobs as it has free slots
        // (here one call each), a job that must not run (a deferred
        // failure) fails as soon as it is taken, and its slot takes
        // another.
        const ran = [];
        const held = [];
        let first = true;
        let batch = [[job, token]];
        for (;;) {
          while (batch.length < 2 - held.length) {
            const tn = `${sw.worker.id}:${++sw.n}`;
            const jn = await sw.worker.getNextJob(tn, { block: false });
            if (!jn) {
              break;
            }
            batch.push([jn, tn]);
          }
          let refused = false;
          for (const [j, t] of batch) {
            ran.push(j.id);
            if (j.deferredFailure) {
              if (!first) {
                await finishGap();
              }
              first = false;
              refused = true;
              await sw.worker.processJob(j, t, () => false);
            } else {
              held.push([j, t]);
            }
          }
          if (!refused || held.length >= 2) {
            break;
          }
          batch = [];
        }
        for (const [j, t] of held) {
          if (!first) {
            await finishGap();
          }
          first = false;
          await sw.worker.processJob(j, t, () => false);
        }
        return ran.sort().join(' ');
      }
      // With a.fetchNext the step is a running Worker's: the finish takes
      // the next job in the same call (or the loop takes it), and that job
      // runs too (same behavior), its own finish fetching none:
      // "<id> <next id>".
      let next = await sw.worker.processJob(job, token, () => !!a.fetchNext);
      if (!a.fetchNext) {
        return job.id;
      }
      let nextToken = token; // a finish's fetch locks with its token
      if (!next && !(sw.worker.limitUntil > Date.now())) {
        // The finish took none (a retry at once, a move to delayed, a
        // refusal or nothing ready): a running Worker's loop takes the
        // next job with moveToActive, unless it met the rate limiter.
        nextToken = `${sw.worker.id}:${++sw.n}`;
        next = await sw.worker.getNextJob(nextToken, { block: false });
      }
      if (!next) {
        return job.id;
      }
      await finishGap();
      await sw.worker.processJob(next, nextToken, () => false);
      return `${job.id} ${next.id}`;
    } finally {
      o.limiter = undefined;
      o.maxStartedAttempts = undefined;
      o.metrics = undefined;
      o.removeOnComplete = undefined;
      o.removeOnFail = undefined;
    }
  },
  // stepTake takes the next ready job and leaves it active, as a worker
  // that dies right after taking it. Returns the job id, or null.
  stepTake: async (a) => {
    const sw = await getStepWorker(a);
    const token = `${sw.worker.id}:${++sw.n}`;
    sw.worker.limitUntil = 0; // Redis decides each step (see steps.go)
    const job = await sw.worker.getNextJob(token, { block: false });
    return job ? job.id : null;
  },
  // stepCheckStalled runs one stalled-jobs check of the step worker and
  // returns the ids it moved back (or failed).
  // a.maxStalledCount, when given, is the worker's maxStalledCount for
  // this check only (moveStalledJobsToWait reads the worker's opts).
  stepCheckStalled: async (a) => {
    const sw = await getStepWorker(a);
    const ids = [];
    const onStalled = (id) => ids.push(id);
    sw.worker.on('stalled', onStalled);
    const keep = sw.worker.opts.maxStalledCount;
    if (typeof a.maxStalledCount === 'number') {
      sw.worker.opts.maxStalledCount = a.maxStalledCount;
    }
    try {
      await sw.worker.moveStalledJobsToWait();
    } finally {
      sw.worker.opts.maxStalledCount = keep;
      sw.worker.off('stalled', onStalled);
    }
    return ids;
  },

  // forget closes and drops what the driver holds for one queue: its Queue,
  // QueueEvents and step worker (not Workers started with startWorker), so
  // a test that uses many short-lived prefixes does not pile them up.
  forget: async (a) => {
    need(a, 'prefix', 'queue');
    const k = qkey(a.prefix, a.queue);
    const tasks = [];
    for (const [m, close] of [
      [stepWorkers, (x) => x.worker.close(true)],
      [queueEvents, (x) => x.qe.close()],
      [queues, (x) => x.close()],
    ]) {
      const p = m.get(k);
      if (p) {
        m.delete(k);
        tasks.push(p.then(close).catch(() => {}));
      }
    }
    tasks.push(closeManualWorkers(a.prefix, a.queue));
    await Promise.all(tasks);
    return null;
  },

  startQueueEvents: async (a) => {
    await getQueueEvents(a);
    return null;
  },
  queueEvents: async (a) => {
    const k = qkey(a.prefix, a.queue);
    if (!queueEvents.has(k)) {
      throw new Error(`oracle: no QueueEvents for ${a.prefix}:${a.queue}; call startQueueEvents first`);
    }
    return (await queueEvents.get(k)).rec.events;
  },
  waitQueueEvents: async (a) => {
    const k = qkey(a.prefix, a.queue);
    if (!queueEvents.has(k)) {
      throw new Error(`oracle: no QueueEvents for ${a.prefix}:${a.queue}; call startQueueEvents first`);
    }
    const { rec } = await queueEvents.get(k);
    const names = a.names ?? [];
    return rec.wait((e) => names.length === 0 || names.includes(e.name), a.count ?? 1, a.timeoutMs ?? 10000);
  },

  closeAll: async () => {
    await closeAll();
    return null;
  },
};
commands['close-all'] = commands.closeAll;
Object.assign(commands, featureCommands({ getQueue, need, connection: conns.worker }));
Object.assign(commands, telemetryCommands({ need, connection: conns.queue }));

function reply(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    reply({ id: null, ok: false, error: `oracle: bad request line: ${err.message}` });
    return;
  }
  const { id, cmd, ...args } = req;
  const f = commands[cmd];
  if (!f) {
    reply({ id, ok: false, error: `oracle: unknown command ${JSON.stringify(cmd)}` });
    return;
  }
  try {
    const result = await f(args);
    reply({ id, ok: true, result: result === undefined ? null : result });
  } catch (err) {
    reply({ id, ok: false, error: err?.message ?? String(err), errorName: err?.name });
  }
}

process.on('unhandledRejection', (err) => console.error('oracle unhandled rejection:', err));
process.on('uncaughtException', (err) => console.error('oracle uncaught exception:', err));

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
const inflight = new Set();
rl.on('line', (line) => {
  if (line.trim() === '') {
    return;
  }
  const p = handle(line).finally(() => inflight.delete(p));
  inflight.add(p);
});
rl.on('close', async () => {
  const timer = setTimeout(() => process.exit(0), 5000);
  try {
    await Promise.race([Promise.allSettled([...inflight]), new Promise((r) => setTimeout(r, 1000))]);
    await closeAll();
    await Promise.all(Object.values(conns).map((c) => c.quit().catch(() => c.disconnect())));
  } finally {
    clearTimeout(timer);
    process.exit(0);
  }
});
reply({ id: 0, ok: true, result: 'ready' });
