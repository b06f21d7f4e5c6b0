// graphile-worker as the lab's adapter commands use it: ORDLAB_PG_URL, the lab's jobs, and the
// side-effect partner's client. graphile-worker 0.18 is an ES module: Node 20 loads it with
// require() (NODE_PATH points at the pinned install).
'use strict'
const worker = require('graphile-worker')

const jobs = JSON.parse(process.env.ORDLAB_JOBS || '[]')
const options = JSON.parse(process.env.ORDLAB_OPTIONS || '{}')
const connectionString = process.env.ORDLAB_PG_URL

async function tell (what, key, attempt) {
  const reply = await fetch(`${process.env.ORDLAB_SINK_URL}/${what}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ job: key, from: process.env.ORDLAB_WORKER, delivery: attempt })
  })
  await reply.text()
}

module.exports = { worker, jobs, options, connectionString, tell }
