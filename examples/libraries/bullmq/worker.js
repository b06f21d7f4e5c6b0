// BullMQ's Worker as its users start it: new Worker(queue, processor, { connection,
// concurrency: 1, lockDuration, stalledInterval, maxStalledCount }) on each of the lab's
// queues, named ORDLAB_WORKER_NAME (BullMQ names its connections bull:<queue>:w:<name>, which
// keeps ordlab's name at the end). The processor tells the side-effect partner when the job
// starts and ends and works for the lab's handler time in between (on its first `fail`
// attempts it tells fail and throws).
'use strict'
const { Worker } = require('bullmq')
const { options, connection, tell } = require('./common')

const queues = (process.env.ORDLAB_QUEUES || 'default').split(' ')
for (const queue of queues) {
  const worker = new Worker(queue, async (job) => {
    const { key, ms, fail } = job.data
    const attempt = job.attemptsMade + 1
    await tell('start', key, attempt)
    await new Promise((resolve) => setTimeout(resolve, ms))
    if (attempt <= fail) {
      await tell('fail', key, attempt)
      throw new Error(`${key}: planned failure on attempt ${attempt}`)
    }
    await tell('end', key, attempt)
    return key
  }, {
    connection: connection(),
    name: process.env.ORDLAB_WORKER_NAME,
    concurrency: 1,
    lockDuration: options.lockDuration ?? 30000,
    stalledInterval: options.stalledInterval ?? 30000,
    maxStalledCount: options.maxStalledCount ?? 1
  })
  worker.on('error', (e) => console.error(`worker error: ${e.message}`))
  worker.on('failed', (job, e) => console.log(`failed ${job && job.id}: ${e.message}`))
}
console.log(`${process.env.ORDLAB_WORKER} working ${queues.join(', ')}`)
