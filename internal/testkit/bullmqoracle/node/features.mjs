// Commands for job schedulers, metrics and cron, kept apart from driver.mjs
// so each feature's additions stay in one place. featureCommands returns
// command handlers in the shape driver.mjs's table uses.

import { createRequire } from 'node:module';

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

export function featureCommands({ getQueue, need }) {
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
    // global-limit, per-priority, meta, orphan and Prometheus calls and
    // returns its result as JSON.
    queueCall: async (a) => {
      need(a, 'method');
      const allowed = ['getDeduplicationJobId', 'removeDeduplicationKey', 'getGlobalConcurrency', 'getGlobalRateLimit', 'getCountsPerPriority',
        'getMeta', 'getVersion', 'isMaxed', 'removeOrphanedJobs', 'exportPrometheusMetrics'];
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
    getMetrics: async (a) => {
      need(a, 'type');
      return (await getQueue(a)).getMetrics(a.type, a.start ?? 0, a.end ?? -1);
    },
  };
}
