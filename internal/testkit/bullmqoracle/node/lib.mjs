// Shared pieces of the drover BullMQ oracle: scripted processors, custom
// backoff strategies, worker option building and plain-JSON views of jobs and
// events. Used by driver.mjs (long-running request/response process) and
// worker.mjs (standalone worker process that tests may SIGKILL).

import { Worker, UnrecoverableError, DelayedError, WaitingChildrenError } from 'bullmq';
import IORedis from 'ioredis';
import { otel, activeSpan } from './telemetry.mjs';

// Keep stdout for the protocol: anything BullMQ or ioredis prints goes to stderr.
export function consoleToStderr() {
  const toErr = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
  console.log = toErr;
  console.info = toErr;
  console.warn = toErr;
  console.debug = toErr;
}

export function parseRedisArg(argv) {
  const i = argv.indexOf('--redis');
  const addr = i >= 0 ? argv[i + 1] : undefined;
  if (!addr) {
    throw new Error('missing --redis host:port');
  }
  const colon = addr.lastIndexOf(':');
  if (colon < 0) {
    throw new Error(`--redis wants host:port, got ${addr}`);
  }
  return { host: addr.slice(0, colon), port: Number(addr.slice(colon + 1)) };
}

export function hasFlag(argv, flag) {
  return argv.includes(flag);
}

// redisConnector reads --redis host:port and --cluster from argv. make()
// returns a new ioredis connection: a Cluster client seeded with host:port
// when --cluster is given, else a single-node client. options are the
// single-node connection options (null for a cluster), for callers that let
// BullMQ create its own connection.
export function redisConnector(argv) {
  const { host, port } = parseRedisArg(argv);
  if (hasFlag(argv, '--cluster')) {
    return {
      cluster: true,
      options: null,
      make: () => new IORedis.Cluster([{ host, port }], { redisOptions: { maxRetriesPerRequest: null } }),
    };
  }
  const options = { host, port, maxRetriesPerRequest: null };
  return { cluster: false, options, make: () => new IORedis(options) };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Custom backoff strategies a worker can be started with (WorkerSpec.backoffStrategy).
// BullMQ calls the worker's strategy only for jobs whose backoff type is not
// "fixed" or "exponential"; "byType" dispatches on that type instead.
export const backoffStrategies = {
  linear100: (attemptsMade) => attemptsMade * 100,
  stop: () => -1,
  zero: () => 0,
  // A negative delay other than -1: BullMQ retries through the delayed set,
  // due at once.
  minus5: () => -5,
  byType: (attemptsMade, type, err, job) => {
    const f = backoffStrategies[type];
    if (!f || type === 'byType') {
      throw new Error(`oracle: no custom backoff strategy named ${type}`);
    }
    return f(attemptsMade, type, err, job);
  },
};

// runBehavior executes one scripted processor step (see Behavior in
// oracle.go). Kinds with an effect (sleep, progress, log, moveToDelayed) run
// `then` afterwards; without `then` the job completes with undefined, which
// BullMQ stores as null (sleep completes with its `value`). redis is a
// connection for the kinds that read Redis (waitKey).
export async function runBehavior(b, job, token, redis) {
  b = b ?? { kind: 'return' };
  const next = () => (b.then ? runBehavior(b.then, job, token, redis) : undefined);
  switch (b.kind) {
    case 'return':
      return b.value;
    case 'echo':
      return job.data;
    case 'fail':
      throw new Error(b.message ?? 'oracle failure');
    case 'failTimes':
      // Fails while attemptsMade (atm, finished attempts) is below times.
      if (job.attemptsMade < (b.times ?? 1)) {
        throw new Error(b.message ?? 'oracle failure');
      }
      return b.value;
    case 'unrecoverable':
      throw new UnrecoverableError(b.message ?? 'oracle unrecoverable');
    case 'sleep':
      await sleep(b.ms ?? 0);
      return b.then ? runBehavior(b.then, job, token, redis) : b.value;
    case 'waitKey': {
      // Holds the job until the Redis key b.key exists (a test's gate),
      // polling, for at most b.ms (default 20 s), then runs then/returns value.
      const until = Date.now() + (b.ms || 20000);
      while (!(await redis.exists(b.key)) && Date.now() < until) {
        await sleep(20);
      }
      return b.then ? runBehavior(b.then, job, token, redis) : b.value;
    }
    case 'progress':
      await job.updateProgress(b.value);
      return next();
    case 'log':
      await job.log(String(b.line ?? ''));
      return next();
    case 'moveToDelayed':
      // Moves the job to delayed (DelayedError path) on its first `times`
      // starts (attemptsStarted, default 1), then runs `then`.
      if (job.attemptsStarted <= (b.times ?? 1)) {
        await job.moveToDelayed(Date.now() + (b.ms ?? 0), token);
        throw new DelayedError();
      }
      return next();
    case 'rateLimit':
      // On the job's first `times` starts (attemptsStarted, default 1):
      // worker.rateLimit(ms) (a job a worker runs has the worker as its
      // queue) and Worker.RateLimitError(); then runs `then`.
      if (job.attemptsStarted <= (b.times ?? 1)) {
        await job.queue.rateLimit(b.ms ?? 0);
        throw Worker.RateLimitError();
      }
      return next();
    case 'sequence': {
      // Step i runs on the i-th start of the job (attemptsStarted-1), the last
      // step repeats.
      const steps = b.steps ?? [];
      if (steps.length === 0) {
        return undefined;
      }
      const i = Math.min(Math.max(job.attemptsStarted - 1, 0), steps.length - 1);
      return runBehavior(steps[i], job, token, redis);
    }
    case 'waitChildren':
      // Parks the job in waiting-children while a child is pending
      // (Job.moveToWaitingChildren + WaitingChildrenError), else runs then.
      if (await job.moveToWaitingChildren(token)) {
        throw new WaitingChildrenError();
      }
      return next();
    case 'childrenValues':
      // Returns the values of the job's children (Job.getChildrenValues),
      // ordered by child key, without the keys (they carry the prefix).
      const values = (await job.getChildrenValues()) ?? {};
      return Object.keys(values).sort().map((k) => values[k]);
    case 'activeSpan':
      // Returns the ids of the span active in the processor (BullMQ's
      // process span when the worker has telemetry), or null.
      return activeSpan();
    case 'fromData': {
      // The behavior comes from the job's own data, field `field` (default "behavior").
      const inner = job.data && typeof job.data === 'object' ? job.data[b.field ?? 'behavior'] : undefined;
      return runBehavior(inner ?? { kind: 'return' }, job, token, redis);
    }
    default:
      throw new Error(`oracle: unknown behavior kind ${JSON.stringify(b.kind)}`);
  }
}

const passThroughWorkerOpts = [
  'name',
  'concurrency',
  'lockDuration',
  'lockRenewTime',
  'stalledInterval',
  'maxStalledCount',
  'maxStartedAttempts',
  'drainDelay',
  'removeOnComplete',
  'removeOnFail',
  'skipStalledCheck',
  'skipLockRenewal',
  'limiter',
  'metrics',
];

// newWorker builds a BullMQ Worker from a WorkerSpec (see oracle.go).
// With autorun false the caller starts it with worker.run().
export function newWorker(spec, prefix, queue, connection, { autorun = true } = {}) {
  const opts = { connection, prefix, autorun };
  for (const k of passThroughWorkerOpts) {
    if (spec[k] !== undefined && spec[k] !== null) {
      opts[k] = spec[k];
    }
  }
  if (spec.backoffStrategy) {
    const f = backoffStrategies[spec.backoffStrategy];
    if (!f) {
      throw new Error(`oracle: unknown backoffStrategy ${spec.backoffStrategy}`);
    }
    opts.settings = { backoffStrategy: f };
  }
  if (spec.telemetry) {
    // BullMQ's telemetry through bullmq-otel (see telemetry.mjs).
    opts.telemetry = otel().telemetry;
  }
  Object.assign(opts, spec.extra ?? {});
  const behavior = spec.behavior ?? { kind: 'return' };
  return new Worker(queue, (job, token) => runBehavior(behavior, job, token, connection), opts);
}

// watchWorker forwards the worker's local events, as plain objects, to push.
export function watchWorker(worker, push) {
  const base = (event, job) => ({
    event,
    time: Date.now(),
    jobId: job?.id,
    name: job?.name,
    attemptsMade: job?.attemptsMade,
    attemptsStarted: job?.attemptsStarted,
  });
  worker.on('active', (job, prev) => push({ ...base('active', job), prev }));
  worker.on('completed', (job, result, prev) => push({ ...base('completed', job), returnvalue: result, prev }));
  worker.on('failed', (job, err, prev) =>
    push({ ...base('failed', job), failedReason: err?.message, errorName: err?.name, prev }),
  );
  worker.on('progress', (job, progress) => push({ ...base('progress', job), progress }));
  worker.on('stalled', (jobId, prev) => push({ event: 'stalled', time: Date.now(), jobId, prev }));
  worker.on('paused', () => push({ event: 'paused', time: Date.now() }));
  worker.on('resumed', () => push({ event: 'resumed', time: Date.now() }));
  worker.on('error', (err) => push({ event: 'error', time: Date.now(), message: err?.message ?? String(err) }));
}

const finiteOrNull = (v, bad, field) => {
  if (v === undefined) {
    return undefined;
  }
  const n = Number(v);
  if (!Number.isFinite(n)) {
    bad.push(field);
    return null;
  }
  return n;
};

// jobView is Node's view of a job as plain JSON: the fields a BullMQ user sees
// on a Job fetched with Queue.getJob.
export function jobView(job) {
  if (!job) {
    return null;
  }
  const nonFinite = [];
  const view = {
    id: job.id,
    name: job.name,
    data: job.data,
    opts: job.opts,
    timestamp: finiteOrNull(job.timestamp, nonFinite, 'timestamp'),
    delay: finiteOrNull(job.delay, nonFinite, 'delay'),
    priority: finiteOrNull(job.priority, nonFinite, 'priority'),
    attemptsMade: finiteOrNull(job.attemptsMade, nonFinite, 'attemptsMade'),
    attemptsStarted: finiteOrNull(job.attemptsStarted, nonFinite, 'attemptsStarted'),
    stalledCounter: finiteOrNull(job.stalledCounter, nonFinite, 'stalledCounter'),
    processedOn: finiteOrNull(job.processedOn, nonFinite, 'processedOn'),
    finishedOn: finiteOrNull(job.finishedOn, nonFinite, 'finishedOn'),
    returnvalue: job.returnvalue,
    failedReason: job.failedReason ?? undefined,
    stacktrace: job.stacktrace ?? undefined,
    progress: job.progress,
    processedBy: job.processedBy,
    deduplicationId: job.deduplicationId,
    parentKey: job.parentKey,
    parent: job.parent,
    repeatJobKey: job.repeatJobKey,
    deferredFailure: job.deferredFailure,
  };
  if (nonFinite.length > 0) {
    view.nonFinite = nonFinite;
  }
  return view;
}
