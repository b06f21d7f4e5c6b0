<?php
// A stream consumer as seed 001's lab writes it (PHP + phpredis, here with ext-pgsql): wait in
// XREADGROUP ... COUNT 1 BLOCK, sleep the job's work, write the order's status with a plain
// UPDATE (the last writer wins), XACK.
//
//     php examples/php/consumer.php
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

while (true) {
    $reply = $r->xReadGroup($group, $me, [$stream => '>'], 1, 0);
    foreach ($reply ?: [] as $entries) {
        foreach ($entries as $id => $f) {
            usleep((int) (($cost[$f['type']] ?? 0) * 1000));
            pg_query_params($db, "UPDATE $table SET status = $1, version = $2 WHERE id = $3",
                [$f['type'], (int) $f['version'], (int) $f['order']]);
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
