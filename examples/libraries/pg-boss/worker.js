// pg-boss's worker as its users write it: boss.work(queue, { batchSize, pollingIntervalSeconds,
// includeMetadata }, handler) for each of the lab's queues. The handler takes the batch in
// order: tells the side-effect partner each job's start, works its time, tells its end (on
// its first `fail` attempts: tells fail and throws, which fails the batch, as pg-boss does).
'use strict'
const { boss, ensureQueues, tell, options } = require('./boss')

async function main () {
  const b = boss()
  await b.start()
  const queues = (process.env.ORDLAB_QUEUES || 'default').split(' ')
  await ensureQueues(b, queues)
  for (const queue of queues) {
    const workOptions = {
      batchSize: options.batchSize || 1,
      pollingIntervalSeconds: options.pollingIntervalSeconds || 0.5,
      includeMetadata: true
    }
    await b.work(queue, workOptions, async (batch) => {
      for (const job of batch) {
        const { key, ms, fail } = job.data
        const attempt = (job.retryCount || 0) + 1
        await tell('start', key, attempt)
        await new Promise((resolve) => setTimeout(resolve, ms))
        if (attempt <= fail) {
          await tell('fail', key, attempt)
          throw new Error(`${key}: planned failure on attempt ${attempt}`)
        }
        await tell('end', key, attempt)
      }
    })
  }
  console.log(`${process.env.ORDLAB_WORKER} working ${queues.join(', ')}`)
}
main().catch((e) => { console.error(e.message); process.exit(1) })
