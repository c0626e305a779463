// Commands for job schedulers, metrics and cron, kept apart from driver.mjs
// so each feature's additions stay in one place. featureCommands returns
// command handlers in the shape driver.mjs's table uses.

import { createRequire } from 'node:module';
import { Job, Worker, UnrecoverableError } from 'bullmq';
import { backoffStrategies } from './lib.mjs';

const require = createRequire(import.meta.url);
// cron-parser is BullMQ's dependency; resolve it from BullMQ's location.
const { CronExpressionParser } = require(require.resolve('cron-parser', { paths: [require.resolve('bullmq')] }));

// schedulerView turns BullMQ's JobSchedulerJson into plain JSON.
function schedulerView(s) {
  if (!s) {
    return null;
  }
  return { ...s, template: s.template ?? null };
}

// manualWorkers holds the Workers without a processor that the manual
// commands drive, by prefix\0queue: BullMQ's "manually processing jobs".
const manualWorkers = new Map();

// closeManualWorkers closes the manual workers of one queue, or all of
// them when prefix is undefined.
export async function closeManualWorkers(prefix, queue) {
  const tasks = [];
  for (const [k, p] of manualWorkers) {
    if (prefix === undefined || k === `${prefix}\u0000${queue}`) {
      manualWorkers.delete(k);
      tasks.push(p.then((w) => w.close(true)).catch(() => {}));
    }
  }
  await Promise.all(tasks);
}

export function featureCommands({ getQueue, need, connection }) {
  // getManualWorker returns the queue's manual worker, made on first use
  // with a.workerOpts (lockDuration, removeOnComplete, removeOnFail,
  // maxStartedAttempts, ...) over the oracle's usual worker settings.
  const getManualWorker = (a) => {
    need(a, 'prefix', 'queue');
    const k = `${a.prefix}\u0000${a.queue}`;
    let p = manualWorkers.get(k);
    if (!p) {
      p = (async () => {
        const w = new Worker(a.queue, null, {
          connection,
          prefix: a.prefix,
          autorun: false,
          name: 'w',
          settings: { backoffStrategy: backoffStrategies.byType },
          ...(a.workerOpts ?? {}),
        });
        w.on('error', (err) => console.error(`oracle manual worker ${a.queue} error:`, err.message));
        await w.waitUntilReady();
        return w;
      })();
      manualWorkers.set(k, p);
      p.catch(() => manualWorkers.delete(k));
    }
    return p;
  };

  // callOnJob calls Job method a.method, one of allowed, on job a.jobId,
  // read first with Queue.getJob as a Node user would, and returns its
  // result as JSON (null for undefined). kind names the command in errors.
  const callOnJob = async (a, kind, allowed) => {
    need(a, 'jobId', 'method');
    if (!allowed.includes(a.method)) {
      throw new Error(`oracle: ${kind} of ${a.method}`);
    }
    const q = await getQueue(a);
    const job = await q.getJob(String(a.jobId));
    if (!job) {
      throw new Error(`oracle: job ${a.jobId} not found in ${q.name}`);
    }
    const r = await job[a.method](...(a.args ?? []));
    return r === undefined ? null : r;
  };
  return {
    // upsertJobScheduler(a.schedulerId, a.repeat, a.template) returns the
    // first run's id (null when none was made).
    upsertJobScheduler: async (a) => {
      need(a, 'schedulerId', 'repeat');
      const q = await getQueue(a);
      const job = await q.upsertJobScheduler(a.schedulerId, a.repeat, a.template ?? undefined);
      return job ? job.id : null;
    },
    removeJobScheduler: async (a) => {
      need(a, 'schedulerId');
      return (await getQueue(a)).removeJobScheduler(a.schedulerId);
    },
    getJobScheduler: async (a) => {
      need(a, 'schedulerId');
      return schedulerView(await (await getQueue(a)).getJobScheduler(a.schedulerId));
    },
    getJobSchedulers: async (a) => {
      const list = await (await getQueue(a)).getJobSchedulers(a.start ?? 0, a.end ?? -1, a.asc ?? false);
      return list.map(schedulerView);
    },
    getJobSchedulersCount: async (a) => (await getQueue(a)).getJobSchedulersCount(),
    // cronNext returns the next a.n runs (ms) of a.pattern in a.tz after
    // a.from (ms), as cron-parser computes them for BullMQ.
    cronNext: async (a) => {
      need(a, 'pattern', 'from');
      const opts = { currentDate: new Date(a.from) };
      if (a.tz) {
        opts.tz = a.tz;
      }
      const it = CronExpressionParser.parse(a.pattern, opts);
      const out = [];
      for (let i = 0; i < (a.n ?? 1); i++) {
        out.push(it.next().getTime());
      }
      return out;
    },
    // getMetrics(a.type, a.start, a.end) is Queue.getMetrics.
    // jobRead(a.method, a.args) calls one of Job's flow reads on job
    // a.jobId and returns its result as JSON.
    jobRead: (a) => callOnJob(a, 'jobRead', ['getChildrenValues', 'getDependencies', 'getDependenciesCount', 'getFailedChildrenValues', 'getIgnoredChildrenFailures']),
    // queueCall(a.method, a.args) calls one of Queue's deduplication,
    // global-limit, per-priority, counts-by-type, meta, orphan and Prometheus calls (reads
    // and changes) and returns its result as JSON.
    queueCall: async (a) => {
      need(a, 'method');
      const allowed = ['getDeduplicationJobId', 'removeDeduplicationKey', 'getGlobalConcurrency', 'getGlobalRateLimit', 'getCountsPerPriority',
        'setGlobalConcurrency', 'removeGlobalConcurrency', 'getMeta', 'getVersion', 'isMaxed', 'removeOrphanedJobs', 'exportPrometheusMetrics',
        'setGlobalRateLimit', 'removeGlobalRateLimit', 'rateLimit', 'removeRateLimitKey', 'trimEvents', 'getJobCountByTypes',
        'updateJobProgress', 'getJobSchedulersCount'];
      if (!allowed.includes(a.method)) {
        throw new Error(`oracle: queueCall of ${a.method}`);
      }
      const q = await getQueue(a);
      const r = await q[a.method](...(a.args ?? []));
      return r === undefined ? null : r;
    },
    // jobCall(a.method, a.args) calls one of Job's changes (deduplication
    // key, logs, flow dependencies) on job a.jobId, read first with
    // Queue.getJob as a Node user would, and returns its result as JSON.
    jobCall: (a) => callOnJob(a, 'jobCall', ['removeDeduplicationKey', 'clearLogs', 'removeChildDependency', 'removeUnprocessedChildren']),
    // manualWorker makes the queue's manual worker with a.workerOpts now
    // (later manual commands use it as made).
    manualWorker: async (a) => {
      await getManualWorker(a);
      return null;
    },
    // manualNext is worker.getNextJob(a.token, {block: false}) on the
    // queue's manual worker; it returns the job's id, or null. With
    // a.forgetLimit the worker first forgets a rate limit it met before
    // (its limitUntil), so the call asks Redis as drover's NextJob does.
    manualNext: async (a) => {
      need(a, 'token');
      const w = await getManualWorker(a);
      if (a.forgetLimit) {
        w.limitUntil = 0;
      }
      const job = await w.getNextJob(a.token, { block: false });
      return job ? job.id : null;
    },
    // manualCall reads job a.jobId with Job.fromId on the manual worker (so
    // the worker's options apply, as for a job getNextJob returned) and
    // calls a.method, one of extendLock, moveToCompleted, moveToFailed,
    // moveToDelayed, moveToWait or moveToWaitingChildren, with a.args. moveToFailed's first
    // argument is {message, unrecoverable}, made into an Error (or
    // UnrecoverableError). It answers {result} or, when BullMQ throws,
    // {error: {message, code}}.
    manualCall: async (a) => {
      need(a, 'jobId', 'method');
      const allowed = ['extendLock', 'moveToCompleted', 'moveToFailed', 'moveToDelayed', 'moveToWait', 'moveToWaitingChildren'];
      if (!allowed.includes(a.method)) {
        throw new Error(`oracle: manualCall of ${a.method}`);
      }
      const w = await getManualWorker(a);
      const job = await Job.fromId(w, String(a.jobId));
      if (!job) {
        throw new Error(`oracle: job ${a.jobId} not found in ${a.queue}`);
      }
      const args = [...(a.args ?? [])];
      if (a.method === 'moveToFailed') {
        const e = args[0] ?? {};
        args[0] = e.unrecoverable ? new UnrecoverableError(e.message) : new Error(e.message);
      }
      try {
        const r = await job[a.method](...args);
        return { result: r === undefined ? null : r };
      } catch (err) {
        return { error: { message: err?.message ?? String(err), code: err?.code ?? null } };
      }
    },
    getMetrics: async (a) => {
      need(a, 'type');
      return (await getQueue(a)).getMetrics(a.type, a.start ?? 0, a.end ?? -1);
    },
  };
}
