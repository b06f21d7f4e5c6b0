// Enqueue the lab's jobs with BullMQ's own client API: queue.add('work', data, { jobId: key,
// attempts: retry + 1, ...options }).
'use strict'
const { Queue } = require('bullmq')
const { jobs, connection } = require('./common')

async function main () {
  const conn = connection()
  for (const job of jobs) {
    const queue = new Queue(job.queue, { connection: conn })
    const added = await queue.add('work', { key: job.key, ms: job.ms, fail: job.fail || 0 },
      { jobId: job.key, attempts: (job.retry || 0) + 1, ...(job.options || {}) })
    console.log(`enqueued ${added.id} on ${job.queue}`)
    await queue.close()
  }
  await conn.quit()
}
main().catch((e) => { console.error(e.message); process.exit(1) })
