// What BullMQ believes of each job, through its own API, as JSON on stdout: `status` is
// job.getState() (waiting, active, delayed, prioritized, completed, failed, …; `missing` when
// queue.getJob finds none), `places` the state that holds it, and the reason a failed job
// failed with.
'use strict'
const { Queue } = require('bullmq')
const { jobs, connection } = require('./common')

async function main () {
  const conn = connection()
  const out = {}
  for (const job of jobs) {
    const queue = new Queue(job.queue, { connection: conn })
    const found = await queue.getJob(job.key)
    if (!found) {
      out[job.key] = { status: 'missing', places: [] }
    } else {
      const state = await found.getState()
      const places = ['completed', 'failed'].includes(state) ? [] : [`${job.queue}:${state}`]
      out[job.key] = { status: state, places, reason: found.failedReason || undefined }
    }
    await queue.close()
  }
  await conn.quit()
  console.log(JSON.stringify({ jobs: out }))
}
main().catch((e) => { console.error(e.message); process.exit(1) })
