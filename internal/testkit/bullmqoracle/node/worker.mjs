// drover BullMQ oracle worker: one BullMQ Worker in its own OS process, so a
// test can SIGKILL it mid-job.
//
// Usage: node worker.mjs --redis host:port [--cluster] --spec '{"prefix":"p","queue":"q","worker":{...}}'
//
// With --cluster, host:port is a seed node of a Redis Cluster.
//
// The worker spec is the same as the driver's startWorker argument. The
// process prints one JSON line per event on stdout: first
// {"event":"ready","pid":n}, then the worker's local events ("active",
// "completed", "failed", "progress", "stalled", "error"), and "closed" after
// a graceful stop (SIGTERM or SIGINT).

import { consoleToStderr, redisConnector, newWorker, watchWorker } from './lib.mjs';

consoleToStderr();

const print = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

const i = process.argv.indexOf('--spec');
if (i < 0 || !process.argv[i + 1]) {
  console.error('worker.mjs: missing --spec JSON');
  process.exit(2);
}
const spec = JSON.parse(process.argv[i + 1]);
const connection = redisConnector(process.argv).make();
connection.on('error', (err) => console.error('worker redis error:', err.message));

const worker = newWorker(spec.worker ?? {}, spec.prefix, spec.queue, connection, { autorun: false });
watchWorker(worker, print);

let stopping = false;
async function stop() {
  if (stopping) {
    return;
  }
  stopping = true;
  const timer = setTimeout(() => process.exit(1), 10000);
  try {
    await worker.close();
    await connection.quit().catch(() => connection.disconnect());
    print({ event: 'closed' });
  } finally {
    clearTimeout(timer);
    process.exit(0);
  }
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('unhandledRejection', (err) => console.error('worker unhandled rejection:', err));

await worker.waitUntilReady();
print({ event: 'ready', pid: process.pid });
worker.run().catch((err) => print({ event: 'error', time: Date.now(), message: err?.message ?? String(err) }));
