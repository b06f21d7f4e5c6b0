// Enqueue the lab's jobs with pg-boss's own client API: boss.send(queue, data, { id,
// singletonKey, … }) with the job's options as they are. A send pg-boss refuses (a stately
// queue's singleton already queued) prints null, as pg-boss returns it.
'use strict'
const { boss, ensureQueues, idOf, jobs } = require('./boss')

async function main () {
  const b = boss()
  await b.start()
  await ensureQueues(b, [...new Set(jobs.map(j => j.queue))])
  for (const job of jobs) {
    const sendOptions = { id: idOf(job.key), ...(job.options || {}) }
    const id = await b.send(job.queue, { key: job.key, ms: job.ms, fail: job.fail || 0 }, sendOptions)
    console.log(`enqueued ${job.key} as ${id} on ${job.queue}`)
  }
  await b.stop({ graceful: false, wait: true })
}
main().catch((e) => { console.error(e.message); process.exit(1) })
