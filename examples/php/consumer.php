<?php
// A stream consumer as seed 001's lab writes it (PHP + phpredis, here with ext-pgsql): wait in
// XREADGROUP ... COUNT 1 BLOCK, sleep the job's work, write the order's status with a plain
// UPDATE (the last writer wins), XACK.
//
//     php examples/php/consumer.php            # the baseline
//     php examples/php/consumer.php --lock     # S4: the seed's per-order lock around the UPDATE
//
// ordlab starts it with its environment (examples/README.md); it runs until it is killed.

$url = parse_url(getenv('ORDLAB_REDIS_URL'));
$r = new Redis();
$r->connect($url['host'], $url['port']);
// A blocking read waits as long as it takes. phpredis 5.3 reads with PHP's
// default_socket_timeout (60 s) unless told otherwise, and refuses -1 in connect().
$r->setOption(Redis::OPT_READ_TIMEOUT, -1);

$db = pg_connect(pg_dsn(getenv('ORDLAB_PG_URL')));
$stream = getenv('ORDLAB_STREAM');
$group = getenv('ORDLAB_GROUP');
$me = getenv('ORDLAB_CONSUMER');
$table = getenv('ORDLAB_ORDERS_TABLE');
$cost = json_decode(getenv('ORDLAB_COST_MS') ?: '{}', true);
$lock = in_array('--lock', array_slice($argv, 1), true);
if ($lock) {
    $lockPrefix = getenv('ORDLAB_LOCK_PREFIX');       // the order id goes after it
    $ttl = (int) getenv('ORDLAB_LOCK_TTL_MS');
    $retryUs = (int) ((float) getenv('ORDLAB_LOCK_RETRY_MS') * 1000);
    $preworkMaxUs = (int) ((float) (getenv('ORDLAB_LOCK_PREWORK_MAX_MS') ?: 0) * 1000);
    $byDelex = getenv('ORDLAB_LOCK_RELEASE') === 'DELEX';
    mt_srand(crc32((string) getenv('ORDLAB_SEED')));
}
// The compare-and-delete every Redis before 8.4 needs: delete only if the value is our token.
const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

while (true) {
    $reply = $r->xReadGroup($group, $me, [$stream => '>'], 1, 0);
    foreach ($reply ?: [] as $entries) {
        foreach ($entries as $id => $f) {
            if ($lock) {
                // S4 (seed 001, 08c): take the order's lock before the job, retrying until ours.
                if ($preworkMaxUs > 0) {
                    usleep(mt_rand(0, $preworkMaxUs));                  // reading the DB, validating …
                }
                $key = $lockPrefix . $f['order'];
                $token = "$me:$id";                                    // a value only this holder has
                while (!$r->set($key, $token, ['NX', 'PX' => $ttl])) { // someone holds it: wait, retry
                    usleep($retryUs);
                }
            }
            usleep((int) (($cost[$f['type']] ?? 0) * 1000));
            pg_query_params($db, "UPDATE $table SET status = $1, version = $2 WHERE id = $3",
                [$f['type'], (int) $f['version'], (int) $f['order']]);
            if ($lock) {
                // Delete the lock only if it is still ours (its TTL may have run out meanwhile).
                if ($byDelex) {
                    $r->rawCommand('DELEX', $key, 'IFEQ', $token);      // Redis 8.4+
                } else {
                    $r->eval(COMPARE_AND_DELETE, [$key, $token], 1);
                }
            }
            $r->xAck($stream, $group, [$id]);
        }
    }
}

// postgresql://user:pw@host:port/db as libpq's key=value string (ext-pgsql takes either; this
// keeps the password out of any error message it prints).
function pg_dsn(string $url): string
{
    $u = parse_url($url);
    $parts = ["host={$u['host']}", "port={$u['port']}", 'dbname=' . ltrim($u['path'], '/'),
        'user=' . urldecode($u['user'])];
    if (isset($u['pass'])) {
        $parts[] = 'password=' . urldecode($u['pass']);
    }
    return implode(' ', $parts);
}
