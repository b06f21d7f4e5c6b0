// Seed 003's TaskQueueWorker in Node with ioredis, as the seed writes it: BRPOPLPUSH from the
// queue into the processing list, run the handler, LREM processing 1 rawJob; a failed handler
// pushes the job (attempts + 1) to queue:retry, or queue:failed after maxAttempts, and the job
// is LREMed all the same; a payload that does not parse throws out of the loop's body, which
// sleeps 1 s and goes on (the entry stays in processing).
//
//     node examples/node/list_worker.js
//
// ordlab starts it with its environment (src/labs/list_queue/list_queue/run.rs): ORDLAB_REDIS_URL
// (its own endpoint of ordlab's interposer, which records every command), ORDLAB_QUEUE,
// ORDLAB_PROCESSING, ORDLAB_RETRY, ORDLAB_FAILED (the run's keys), ORDLAB_SINK_URL and
// ORDLAB_EFFECT (the e-mail is `POST $ORDLAB_SINK_URL/email`, the side-effect sink over HTTP),
// ORDLAB_WORKER (its name, W1) and ORDLAB_COST_MS (each job's work in ms: {"*": 100, "job-1": 300}).
// It runs until it is killed.
//
// ioredis 6's defaults, and what they do here:
// - `protocol: 3`: it opens every connection with HELLO 3 (RESP3); the interposer follows.
//   BRPOPLPUSH's reply is a bulk string in both protocols: no change.
// - no `blockingTimeout`: BRPOPLPUSH ... 0 blocks forever, as the seed means. (Setting one makes
//   ioredis give up on the command client-side while the server may still move a job.)
// - `maxRetriesPerRequest: 20`, the offline queue and `autoResendUnfulfilledCommands: true`: if
//   the connection drops while BRPOPLPUSH waits, ioredis reconnects and sends it again. A job
//   the server moved just before the drop then stays in processing while the worker waits for
//   another one: the same stuck job as a crash, without a crash. A SIGKILL (this lab's fault)
//   ends all of that; none of these defaults changes its outcome.
// - `enableReadyCheck: true`: INFO on every connect, before the loop. Turned off here, the one
//   option this worker sets: the check only waits for a server still loading its data (not
//   the case here) and its reply, the server's version and more, would fill the timeline.
//   It changes no outcome. (CLIENT SETINFO and HELLO are left out of the timeline as set-up.)
'use strict';

const Redis = require('ioredis');

const env = process.env;
const costMs = JSON.parse(env.ORDLAB_COST_MS || '{}');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class TaskQueueWorker {
    constructor(redisUrl) {
        this.client = new Redis(redisUrl, { enableReadyCheck: false });
        this.queueKey = env.ORDLAB_QUEUE;
        this.processingKey = env.ORDLAB_PROCESSING;
        this.isWorking = false;
    }

    async start() {
        this.isWorking = true;
        console.log(`Worker started listening on queue: ${this.queueKey}`);

        while (this.isWorking) {
            try {
                const rawJob = await this.client.brpoplpush(this.queueKey, this.processingKey, 0);
                if (!rawJob) continue;

                const job = JSON.parse(rawJob);
                await this.processJob(job);

                await this.client.lrem(this.processingKey, 1, rawJob);
            } catch (error) {
                console.error('Error in worker processing loop:', error.message);
                await new Promise((resolve) => setTimeout(resolve, 1000));
            }
        }
    }

    async processJob(job) {
        console.log(`Processing job ID: ${job.id} with name: ${job.name}`);

        try {
            // The seed knows one handler; ordlab's jobs are all e-mails under other names too.
            await this.handleEmailTask(job);
            console.log(`Successfully completed job ID: ${job.id}`);
        } catch (error) {
            console.error(`Failed to process job ID ${job.id}:`, error.message);
            await this.handleFailedJob(job, error);
        }
    }

    // The seed's "simulated e-mail": the job's work, then the e-mail itself at the partner.
    async handleEmailTask(job) {
        if (!job.data || !job.data.email) {
            throw new Error('Recipient email is missing in job payload');
        }
        const label = job.id ?? job.name;
        await sleep(costMs[label] ?? costMs['*'] ?? 0);
        const res = await fetch(`${env.ORDLAB_SINK_URL}/${env.ORDLAB_EFFECT || 'email'}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ job: label, from: env.ORDLAB_WORKER, delivery: job.attempts + 1 }),
        });
        if (!res.ok) {
            throw new Error(`partner answered ${res.status}`);
        }
        console.log(`Email sent successfully to ${job.data.email}`);
    }

    async handleFailedJob(job, error) {
        job.attempts += 1;
        if (job.attempts < job.maxAttempts) {
            console.log(`Retrying job ID ${job.id}, attempt ${job.attempts} of ${job.maxAttempts}`);
            await this.client.rpush(env.ORDLAB_RETRY, JSON.stringify(job));
        } else {
            console.error(`Job ID ${job.id} reached maximum retry attempts. Moving to dead letter queue.`);
            await this.client.rpush(env.ORDLAB_FAILED, JSON.stringify(job));
        }
    }
}

new TaskQueueWorker(env.ORDLAB_REDIS_URL).start();
