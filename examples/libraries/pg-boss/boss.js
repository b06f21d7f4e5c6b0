// pg-boss as the lab's adapter commands use it: one PgBoss on ORDLAB_PG_URL (its own schema,
// created by its first start), the lab's queues made with the lab's queue options
// (ORDLAB_OPTIONS: policy, retryLimit, retryDelay, expireInSeconds, and the boss's own
// monitorIntervalSeconds / queueCacheIntervalSeconds / pollingIntervalSeconds), each job's id a
// UUID made from its key (pg-boss ids are UUIDs), and the side-effect partner's client.
'use strict'
const crypto = require('node:crypto')
const PgBoss = require('pg-boss')

const options = JSON.parse(process.env.ORDLAB_OPTIONS || '{}')
const jobs = JSON.parse(process.env.ORDLAB_JOBS || '[]')

function boss () {
  const b = new PgBoss({
    connectionString: process.env.ORDLAB_PG_URL,
    max: 4,
    monitorIntervalSeconds: options.monitorIntervalSeconds || 60,
    queueCacheIntervalSeconds: options.queueCacheIntervalSeconds || 60,
    superviseIntervalSeconds: options.superviseIntervalSeconds || 60
  })
  b.on('error', (e) => console.error(`pg-boss error: ${e.message}`))
  return b
}

function queueOptions () {
  const q = { policy: options.policy || 'standard' }
  for (const k of ['retryLimit', 'retryDelay', 'expireInSeconds']) {
    if (k in options) q[k] = options[k]
  }
  return q
}

async function ensureQueues (b, names) {
  for (const name of names) {
    if (!(await b.getQueue(name))) await b.createQueue(name, queueOptions())
  }
}

// pg-boss wants UUIDs: the key's MD5, shaped as one.
function idOf (key) {
  const h = crypto.createHash('md5').update(key).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`
}

async function tell (what, key, attempt) {
  const reply = await fetch(`${process.env.ORDLAB_SINK_URL}/${what}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ job: key, from: process.env.ORDLAB_WORKER, delivery: attempt })
  })
  await reply.text()
}

module.exports = { boss, ensureQueues, idOf, tell, options, jobs }
