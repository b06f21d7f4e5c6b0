// The Lua scripts BullMQ loads, by the SHA1 ioredis sends them as (EVALSHA): each of
// dist/cjs/scripts/*.js exports { name, content, keys }, defined with defineCommand, whose SHA1
// is that of `content`. Prints {"<sha1>": "<name>"}.
'use strict'
const crypto = require('node:crypto')
const fs = require('node:fs')
const path = require('node:path')

const dir = path.join(path.dirname(require.resolve('bullmq')), 'scripts')
const out = {}
for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.js') && f !== 'index.js')) {
  for (const script of Object.values(require(path.join(dir, file)))) {
    if (script && typeof script.content === 'string') {
      out[crypto.createHash('sha1').update(script.content).digest('hex')] = script.name
    }
  }
}
console.log(JSON.stringify(out))
