// The BullMQ side of `make bench-peers` (run by benches/peers/main.rs with
// NODE_PATH pointing at a pinned bullmq install):
//   node bullmq.cjs <port> <jobs> cycle    add jobs in batches of 8; a worker
//                                          (concurrency 8) completes each;
//                                          prints {"jobs":…,"seconds":…}
//   node bullmq.cjs <port> <jobs> waiting  add jobs, no worker: they wait
const { Queue, Worker } = require('bullmq');

const [port, jobs, mode] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
const connection = { host: '127.0.0.1', port };
const name = 'peers';

async function add(queue) {
  for (let i = 0; i < jobs; i += 8) {
    const batch = [];
    for (let j = i; j < Math.min(i + 8, jobs); j++) {
      // Completed jobs are removed, as emq's ACK removes them.
      batch.push({ name: 'job', data: {}, opts: { jobId: `j${j}`, removeOnComplete: true } });
    }
    await queue.addBulk(batch);
  }
}

async function main() {
  const queue = new Queue(name, { connection });
  if (mode === 'waiting') {
    await add(queue);
    await queue.close();
    return;
  }
  let done = 0;
  let finished;
  const all = new Promise((resolve) => (finished = resolve));
  const start = process.hrtime.bigint();
  const worker = new Worker(name, async () => {}, { connection, concurrency: 8 });
  worker.on('completed', () => {
    done += 1;
    if (done === jobs) finished();
  });
  await add(queue);
  await all;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await worker.close();
  await queue.close();
  console.log(JSON.stringify({ jobs, seconds }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
