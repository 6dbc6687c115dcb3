"""A Celery worker for fault tests, with an optional injected delay inside the aggregation.

    FAULT_COMPUTE_DELAY=30 FAULT_MARKER=/tmp/x python tests/reliability/fault_worker.py QUEUE

With a delay, `aggregation.services.batch_compute` first writes FAULT_MARKER and sleeps, so
the test knows the worker is in the middle of a run when it kills it.
"""
import os
import sys
import time

import django

django.setup()

delay = float(os.environ.get("FAULT_COMPUTE_DELAY", "0"))
if delay:
    from aggregation import services

    original = services.batch_compute

    def slow_batch_compute(**kwargs):
        with open(os.environ["FAULT_MARKER"], "w") as marker:
            marker.write(str(os.getpid()))
        time.sleep(delay)
        return original(**kwargs)

    services.batch_compute = slow_batch_compute

from dialtom_site.celery import app  # noqa: E402

app.worker_main([
    "worker", "--pool", "solo", "--queues", sys.argv[1], "--loglevel", "INFO",
    "--without-gossip", "--without-mingle", "--hostname", f"fault-{os.getpid()}@%h",
])
