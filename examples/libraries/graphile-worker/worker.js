// graphile-worker's runner as its users start it: run({ connectionString, concurrency,
// pollInterval, taskList }) with one task, `work`: it tells the side-effect partner when it
// starts and ends, and works for the lab's handler time in between (on its first `fail`
// attempts it tells fail and throws, so graphile-worker retries it).
'use strict'
const { worker, options, connectionString, tell } = require('./common')

async function main () {
  const runner = await worker.run({
    connectionString,
    concurrency: 1,
    pollInterval: options.pollInterval || 2000,
    noHandleSignals: false,
    taskList: {
      work: async (payload, helpers) => {
        const attempt = helpers.job.attempts
        await tell('start', payload.key, attempt)
        await new Promise((resolve) => setTimeout(resolve, payload.ms))
        if (attempt <= payload.fail) {
          await tell('fail', payload.key, attempt)
          throw new Error(`${payload.key}: planned failure on attempt ${attempt}`)
        }
        await tell('end', payload.key, attempt)
      }
    }
  })
  await runner.promise
}
main().catch((e) => { console.error(e.message); process.exit(1) })
