// What graphile-worker believes of each job, read from its public `graphile_worker.jobs` view
// (its documented way to look at jobs), as JSON on stdout: `locked` (a worker holds it:
// locked_by), `failed` (attempts used up), `retry` (an attempt failed, another is due),
// `queued`, or `missing` (graphile-worker deletes a job once it completes: the ledger says
// whether it ran).
'use strict'
const { jobs, connectionString } = require('./common')
const { Client } = require('pg')

async function main () {
  const client = new Client({ connectionString })
  await client.connect()
  const out = {}
  for (const job of jobs) {
    const { rows } = await client.query(
      'select locked_by, attempts, max_attempts, last_error from graphile_worker.jobs where key = $1',
      [job.key]
    )
    const row = rows[0]
    if (!row) {
      out[job.key] = { status: 'missing', places: [] }
    } else if (row.locked_by) {
      out[job.key] = { status: 'locked', places: ['locked_by'] }
    } else if (row.attempts >= row.max_attempts) {
      out[job.key] = { status: 'failed', places: ['jobs'] }
    } else {
      out[job.key] = { status: row.last_error ? 'retry' : 'queued', places: ['jobs'] }
    }
  }
  await client.end()
  console.log(JSON.stringify({ jobs: out }))
}
main().catch((e) => { console.error(e.message); process.exit(1) })
