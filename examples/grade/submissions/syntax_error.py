"""Student G: a consumer that does not parse."""

import os

import redis

r = redis.Redis.from_url(os.environ["ORDLAB_REDIS_URL"]
while True:
    pass
