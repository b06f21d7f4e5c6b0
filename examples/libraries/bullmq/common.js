// BullMQ as the lab's adapter commands use it: an ioredis connection to ORDLAB_REDIS_URL (as
// BullMQ's docs set it up, maxRetriesPerRequest null), the lab's jobs and options, and the
// side-effect partner's client.
'use strict'
const IORedis = require('ioredis')

const jobs = JSON.parse(process.env.ORDLAB_JOBS || '[]')
const options = JSON.parse(process.env.ORDLAB_OPTIONS || '{}')

function connection () {
  return new IORedis(process.env.ORDLAB_REDIS_URL, { maxRetriesPerRequest: null })
}

async function tell (what, key, attempt) {
  const reply = await fetch(`${process.env.ORDLAB_SINK_URL}/${what}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ job: key, from: process.env.ORDLAB_WORKER, delivery: attempt })
  })
  await reply.text()
}

module.exports = { jobs, options, connection, tell }
