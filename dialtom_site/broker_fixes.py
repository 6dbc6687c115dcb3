"""Keep the Celery worker alive when Redis dies under it (issue 20, break 3).

With kombu 5.7.0 / Celery 5.7.0 (the newest on PyPI) and a late-acknowledged task in
flight, a Redis outage killed the worker about one time in three:

1. the consumer sees the connection fail and calls `Connection.collect()`; closing the
   channel there fails half-way (its BRPOP or a fanout-queue delete hits the dead server),
   so the channel stays open, but `collect()` still detaches the transport
   (`transport.client = None`);
2. `Connection.close()` then closes that channel again, which restores its unacknowledged
   message ("Restoring 1 unacknowledged message(s)") through a new connection pool built
   from `transport.client` -- now None: `AttributeError: 'NoneType' object has no attribute
   'hostname'`. An AttributeError is not a connection error, so nothing catches it:
   "Unrecoverable error", the worker exits.

No setting avoids this path: the retry settings (`broker_connection_retry`,
`broker_connection_max_retries`) govern the reconnection that the crash prevents from
starting; `worker_cancel_long_running_tasks_on_connection_loss` acts after it; with remote
control off (`worker_enable_remote_control=False`) the worker still died in the first round
of tests/reliability/test_broker_outage_worker.py. So a channel whose connection is gone
says so with the transport's own connection error, which every close path already ignores.
Nothing is lost by not restoring there: the Redis transport keeps unacknowledged messages in
Redis itself, and they come back after the visibility timeout (CELERY_BROKER_TRANSPORT_OPTIONS).
"""
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

_connparams = kombu_redis.Channel._connparams


def _connparams_or_connection_error(self, asynchronous=False):
    if self.connection.client is None:
        raise RedisConnectionError("the broker connection is closed (Redis went away)")
    return _connparams(self, asynchronous=asynchronous)


if not getattr(kombu_redis.Channel._connparams, "dialtom_fixed", False):
    _connparams_or_connection_error.dialtom_fixed = True
    kombu_redis.Channel._connparams = _connparams_or_connection_error
