<?php
// Student C: compare-and-set in PHP (phpredis, ext-pgsql). The UPDATE only applies an event
// newer than the row. It logs each order in Latin-1, as its author's terminal does ("reçu").

$url = parse_url(getenv('ORDLAB_REDIS_URL'));
$r = new Redis();
$r->connect($url['host'], $url['port']);
$r->setOption(Redis::OPT_READ_TIMEOUT, -1);
$pg = parse_url(getenv('ORDLAB_PG_URL'));
$db = pg_connect("host={$pg['host']} port={$pg['port']} dbname=" . ltrim($pg['path'], '/')
    . ' user=' . urldecode($pg['user']) . (isset($pg['pass']) ? ' password=' . urldecode($pg['pass']) : ''));
$stream = getenv('ORDLAB_STREAM');
$group = getenv('ORDLAB_GROUP');
$me = getenv('ORDLAB_CONSUMER');
$table = getenv('ORDLAB_ORDERS_TABLE');
$cost = json_decode(getenv('ORDLAB_COST_MS') ?: '{}', true);
$claimMinIdle = getenv('ORDLAB_CLAIM_MIN_IDLE_MS');
$claimPollUs = (int) ((float) (getenv('ORDLAB_CLAIM_POLL_MS') ?: 50) * 1000);

function handle($r, $db, $stream, $group, $table, $cost, $id, $f)
{
    echo "re\xe7u {$f['type']} pour la commande {$f['order']}\n"; // "reçu", in Latin-1
    usleep((int) (($cost[$f['type']] ?? 0) * 1000));
    pg_query_params($db, "UPDATE $table SET status = $1, version = $2 WHERE id = $3 AND version < $2",
        [$f['type'], (int) $f['version'], (int) $f['order']]);
    $r->xAck($stream, $group, [$id]);
}

while (true) {
    if ($claimMinIdle) {
        // [next, [[id, [k, v, ...]], ...], deleted]
        $reply = $r->rawCommand('XAUTOCLAIM', $stream, $group, $me, $claimMinIdle, '0-0', 'COUNT', 1);
        $claimed = $reply[1] ?? [];
        foreach ($claimed as [$id, $kv]) {
            $f = [];
            for ($i = 0; $i + 1 < count($kv); $i += 2) {
                $f[$kv[$i]] = $kv[$i + 1];
            }
            handle($r, $db, $stream, $group, $table, $cost, $id, $f);
        }
        if (!$claimed) {
            usleep($claimPollUs);
        }
        continue;
    }
    $reply = $r->xReadGroup($group, $me, [$stream => '>'], 1, 0);
    foreach ($reply ?: [] as $entries) {
        foreach ($entries as $id => $f) {
            handle($r, $db, $stream, $group, $table, $cost, $id, $f);
        }
    }
}
