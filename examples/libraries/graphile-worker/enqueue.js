// Enqueue the lab's jobs with graphile-worker's own client API: WorkerUtils.addJob('work',
// payload, { jobKey: key, queueName, maxAttempts: retry + 1 }).
'use strict'
const { worker, jobs, connectionString } = require('./common')

async function main () {
  const utils = await worker.makeWorkerUtils({ connectionString })
  try {
    await utils.migrate()
    for (const job of jobs) {
      const spec = { jobKey: job.key, maxAttempts: (job.retry || 0) + 1, ...(job.options || {}) }
      const added = await utils.addJob('work', { key: job.key, ms: job.ms, fail: job.fail || 0 }, spec)
      console.log(`enqueued ${job.key} as job ${added.id}`)
    }
  } finally {
    await utils.release()
  }
}
main().catch((e) => { console.error(e.message); process.exit(1) })
