// What pg-boss believes of each job, through its own API, as JSON on stdout: `status` is
// boss.getJobById(queue, id).state (created, retry, active, completed, cancelled, failed;
// `missing` when it has no such job), `places` the queue and state that hold it.
'use strict'
const { boss, idOf, jobs } = require('./boss')

async function main () {
  const b = boss()
  await b.start()
  const out = {}
  for (const job of jobs) {
    const found = await b.getJobById(job.queue, idOf(job.key))
    out[job.key] = found
      ? { status: found.state, places: ['completed', 'cancelled', 'failed'].includes(found.state) ? [] : [`${job.queue}:${found.state}`] }
      : { status: 'missing', places: [] }
  }
  await b.stop({ graceful: false, wait: true })
  console.log(JSON.stringify({ jobs: out }))
}
main().catch((e) => { console.error(e.message); process.exit(1) })
