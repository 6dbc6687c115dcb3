"""A full-size rehearsal of a study, to budget it: `manage.py rehearse DIR` (bench/rehearsal.py at scale).

The authors' files in DIR go in through `import_dialtom` (one batch a file); simulated
verifiers (`rehearsal_model.json`: how many, their accuracy and speed) then work every batch
through the real HTTP API (`next-item`, `judgments`) against gunicorn + PostgreSQL, with a
Celery worker (and its beat) doing what it does in production: adaptive overlap refreshes,
the aggregation of each batch as it completes. Then a release is made and a baseline model
is scored through the API, and the study report of the release is fetched. Meanwhile a staff
session times the dashboard.

What it measures, per batch and in all: wall time, judgments, verifier-hours (the simulated
seconds each judgment reports, not the wall clock) and cost (judgments × pay per item), for
the run's own policy (adaptive k-min..k-max, or a fixed k) — measured — and for fixed k=3 and
k=5 — projected from the same items (k judgments each, the model's mean time per judgment,
the run's measured judgments per second). It checks that no request failed, no item got
more judgments than it was allowed, and every acknowledged judgment is stored.

The servers use the database and settings of this process (`DATABASE_URL`, `RELEASE_ROOT`,
the Celery queue): run it on a scratch database (bench/rehearsal.py makes one).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import random
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.test.utils import override_settings

from dialtom_site.db.statistics import analyze_own_tables
from dialtom_site.loopback import LoopbackClient

from .servers import Servers, server_env

ROOT = Path(__file__).resolve().parent.parent
MODEL_FILE = Path(__file__).with_name("rehearsal_model.json")
LETTERS = ("A", "B", "C", "D")


# --- the simulated verifiers ------------------------------------------------------------------


@dataclass(frozen=True)
class VerifierModel:
    verifiers: int
    accuracy: dict
    seconds: dict
    speed_factor: tuple
    flawed: dict
    none_share_of_errors: float

    @classmethod
    def load(cls, path: Path | str | None = None, **overrides) -> "VerifierModel":
        data = json.loads(Path(path or MODEL_FILE).read_text())
        data.pop("about", None)
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls(verifiers=int(data["verifiers"]), accuracy=data["accuracy"], seconds=data["seconds"],
                   speed_factor=tuple(data["speed_factor"]), flawed=data["flawed"],
                   none_share_of_errors=float(data["none_share_of_errors"]))

    def mean_seconds(self, task: str) -> float:
        """Expected simulated seconds of one judgment: log-normal mean × the mean speed factor."""
        s = self.seconds[task]
        return s["median"] * math.exp(s["sigma"] ** 2 / 2) * sum(self.speed_factor) / 2

    def as_dict(self) -> dict:
        return {"verifiers": self.verifiers, "accuracy": self.accuracy, "seconds": self.seconds,
                "speed_factor": list(self.speed_factor), "flawed": self.flawed,
                "none_share_of_errors": self.none_share_of_errors}


def item_truths(*, batch_ids, model: VerifierModel, seed: int) -> dict[tuple, tuple[str, str, list[str]]]:
    """(batch, question, option texts) → (truth, task, options): the answer careful readers
    converge on — the intended one, except on the model's `flawed` share of items."""
    from annotation.models import Item

    truths = {}
    for item_id, batch, task, question, options, answer in Item.objects.filter(batch_id__in=batch_ids).values_list(
        "item_id", "batch__name", "task", "question", "options", "answer"
    ):
        rng = random.Random(int(hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()[:12], 16))
        truth = answer
        if answer in LETTERS and rng.random() < model.flawed[task]:
            truth = rng.choice([c for c in LETTERS if c != answer] + ["NONE"])
        truths[(batch, question, frozenset(options))] = (truth, task, options)
    return truths


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    acknowledged: dict = field(default_factory=dict)  # idempotency key -> judgment id
    seconds: dict = field(default_factory=dict)  # batch -> simulated seconds
    errors: list = field(default_factory=list)
    requests: int = 0

    def error(self, message: str):
        with self.lock:
            self.errors.append(message)


class SimulatedVerifier(threading.Thread):
    def __init__(self, *, n: int, token: str, base_url: str, batches: list[str], truths: dict, model: VerifierModel,
                 tally: Tally, done: threading.Event, seed: int, finished: set, backoff: float):
        super().__init__(daemon=True, name=f"verifier-{n}")
        self.rng = random.Random(seed * 7919 + n)
        self.client = LoopbackClient(base_url, {"Authorization": f"Token {token}", "Content-Type": "application/json"})
        self.batches = list(batches)
        self.rng.shuffle(self.batches)
        self.truths, self.model, self.tally, self.done = truths, model, tally, done
        self.finished, self.backoff, self.retry_at = finished, backoff, {}  # finished: batches done, for everyone
        self.accuracy = {task: self.rng.uniform(*span) for task, span in model.accuracy.items()}
        self.speed = self.rng.uniform(*model.speed_factor)

    def _choice(self, view: dict) -> tuple[str, float]:
        shown = {o["text"]: o["letter"] for o in view["options"]}
        truth, task, options = self.truths.get(
            (view["batch"], view["question"], frozenset(t for t in shown if shown[t] in LETTERS)), (None, view["task"], None)
        )
        letters = [o["letter"] for o in view["options"]]
        if truth in LETTERS and options:
            right = shown.get(options[LETTERS.index(truth)])
        else:
            right = truth if truth in ("NONE", "NOTA") else None
        if right is None or self.rng.random() >= self.accuracy[task]:
            wrong = "NONE" if self.rng.random() < self.model.none_share_of_errors else self.rng.choice(
                [c for c in letters if c != right and c in LETTERS])
            answer = wrong if wrong != right else self.rng.choice([c for c in letters if c != right])
        else:
            answer = right
        s = self.model.seconds[task]
        return answer, round(self.rng.lognormvariate(math.log(s["median"] * self.speed), s["sigma"]), 2)

    def run(self):
        try:
            while not self.done.is_set():
                worked = False
                for batch in self.batches:
                    if batch in self.finished or self.retry_at.get(batch, 0) > time.monotonic():
                        continue
                    view = None  # the item in hand: from next-item, then from each answer (submit-and-next)
                    while not self.done.is_set():
                        if view is None:
                            status, data, _ = self.client.request("GET", f"/api/v1/next-item/?batch={batch}")
                            if status == 204:  # nothing for me now; an adaptive round may bring more later
                                self.retry_at[batch] = time.monotonic() + self.backoff
                                break
                            if status != 200:
                                self.tally.error(f"next-item {batch} {status}: {data[:200]!r}")
                                break
                            view = json.loads(data)
                        choice, seconds = self._choice(view)
                        body = {"claim": view["claim"], "choice": choice, "seconds_spent": seconds,
                                "idempotency_key": str(uuid.UUID(int=self.rng.getrandbits(128), version=4))}
                        status, data, _ = self.client.request("POST", "/api/v1/judgments/?next=1", body)
                        view = None
                        if status != 201:
                            self.tally.error(f"submit {batch} {status}: {data[:200]!r}")
                            continue
                        worked = True
                        answer = json.loads(data)
                        with self.tally.lock:
                            self.tally.acknowledged[body["idempotency_key"]] = answer["id"]
                            self.tally.seconds[batch] = self.tally.seconds.get(batch, 0.0) + seconds
                        view = answer.get("next_item")
                        if view is None:  # the answer's response says nothing is left for me now
                            self.retry_at[batch] = time.monotonic() + self.backoff
                            break
                if not worked:
                    self.done.wait(0.25)
        except Exception as exc:  # noqa: BLE001 - every failure is a finding
            self.tally.error(f"{type(exc).__name__}: {exc}")
        finally:
            self.client.close()


class DashboardProbe(threading.Thread):
    """A staff session loading /dashboard/ every `every` seconds while the run goes on."""

    def __init__(self, *, base_url: str, cookie: str, every: float, done: threading.Event):
        super().__init__(daemon=True, name="dashboard-probe")
        self.client = LoopbackClient(base_url, {"Cookie": cookie})
        self.every, self.done, self.times, self.statuses = every, done, [], {}

    def run(self):
        while not self.done.is_set():
            try:
                status, _, seconds = self.client.request("GET", "/dashboard/")
            except OSError as exc:
                status, seconds = f"{type(exc).__name__}", None
            self.statuses[str(status)] = self.statuses.get(str(status), 0) + 1
            if seconds is not None:
                self.times.append(seconds)
            self.done.wait(self.every)
        self.client.close()

    def summary(self) -> dict:
        return {"n": len(self.times), **percentiles(self.times), "statuses": self.statuses}


class StatisticsKeeper(threading.Thread):
    """What autovacuum does for the planner, on a server that runs without it (`autovacuum =
    off`, as on the machines this project is tested on): ANALYZE every `every` seconds while the
    run grows its tables from empty. Without it the planner keeps its guesses for empty tables
    and the queue's rules (`queue.slots_open_to`, asked by each overlap refresh for every pool
    member) read a verifier's every claim once per slot: at 55k judgments one refresh took 12 s
    for one verifier and one batch, 0.34 s after an ANALYZE, and the run slowed from 100 to 30
    judgments a second. With autovacuum on (production, docker-compose) it does nothing."""

    def __init__(self, *, every: float, done: threading.Event):
        super().__init__(daemon=True, name="statistics-keeper")
        self.every, self.done, self.runs, self.autovacuum = every, done, 0, None

    def run(self):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SHOW autovacuum")
                self.autovacuum = cursor.fetchone()[0]
            while self.autovacuum == "off" and not self.done.wait(self.every):
                analyze_own_tables(connection)
                self.runs += 1
        finally:
            connection.close()  # this thread's own connection

    def summary(self) -> dict:
        return {"autovacuum": self.autovacuum, "analyze_every_seconds": self.every if self.autovacuum == "off" else None,
                "analyze_runs": self.runs}


def percentiles(values: list[float]) -> dict:
    if not values:
        return {"p50_ms": None, "p95_ms": None, "max_ms": None}
    ordered = sorted(values)

    def at(q):
        return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000, 1)

    return {"p50_ms": at(0.5), "p95_ms": at(0.95), "max_ms": at(1.0)}


# --- the run --------------------------------------------------------------------------------


def _people(*, n: int, pool: str, prefix: str) -> tuple[list[str], object, str]:
    """n verifiers in `pool` with API tokens, and a staff member with a token and a session cookie."""
    from importlib import import_module

    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from rest_framework.authtoken.models import Token

    from accounts.models import Pool, Role, User

    pool_row, _ = Pool.objects.get_or_create(name=pool)
    verifiers = []
    for i in range(n):
        user, _ = User.objects.get_or_create(username=f"{prefix}-v{i:03d}", defaults={"role": Role.VERIFIER})
        user.set_unusable_password()
        user.save(update_fields=["password"])
        verifiers.append(user)
    pool_row.members.add(*verifiers)
    tokens = [Token.objects.get_or_create(user=u)[0].key for u in verifiers]
    staff, _ = User.objects.get_or_create(username=f"{prefix}-staff", defaults={"role": Role.STAFF, "is_staff": True})
    session = import_module(settings.SESSION_ENGINE).SessionStore()
    session[SESSION_KEY] = str(staff.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0] if getattr(settings, "AUTHENTICATION_BACKENDS", None) \
        else "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = staff.get_session_auth_hash()
    session.save()
    return tokens, staff, f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def _short(batch_ids: list[int]) -> bool:
    from django.db.models import F

    from verification.models import QueueSlot

    return QueueSlot.objects.filter(batch_id__in=batch_ids, taken__lt=F("needed")).exists()


def _stalled(batch_ids: list[int], seconds: float) -> str:
    """Why no judgment came for `seconds`: the items still short of what they were asked for."""
    from django.db.models import F

    from verification.models import QueueSlot

    short = QueueSlot.objects.filter(batch_id__in=batch_ids, taken__lt=F("needed"))
    names = sorted(set(short.values_list("batch__name", flat=True)))
    return (f"no judgment for {seconds:.0f} s while {short.count()} items of {len(names)} batches ({', '.join(names[:5])}) "
            "still need one: the sweep settles items nobody may take (the context rule) after "
            f"{settings.DIALTOM_OVERLAP_STALL_SECONDS:.0f} s quiet, so something else holds them (a lapsed claim, "
            "a worker down)")


def _settled_short(batch_ids: list[int]) -> int:
    """Items the sweep settled below what adaptive overlap asked: nobody might take them (docs/overlap.md)."""
    from django.db.models import Sum

    from verification.models import AdaptiveOverlap

    return AdaptiveOverlap.objects.filter(batch_id__in=batch_ids).aggregate(n=Sum("settled_short"))["n"] or 0


def _release_ready(client: LoopbackClient, version: str) -> bool:
    """A ready release answers with its manifest; one still building with its status."""
    status, data, _ = client.request("GET", f"/api/v1/releases/{version}/")
    body = json.loads(data)
    if status != 200 or body.get("status") == "failed":
        raise RuntimeError(f"release {version}: {status} {data[:300]!r}")
    return "status" not in body and body.get("version") == version


def _wait(predicate, *, timeout: float, every: float = 1.0, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"{what} not done within {timeout:.0f} s")


def _batches_aggregated(batch_ids: list[int], *, finished: set | None = None, names: dict | None = None) -> bool:
    """Every batch is complete and its current aggregation covers its last judgment; the
    complete ones go into `finished` (the simulated verifiers stop asking for them)."""
    from django.db.models import Max

    from aggregation.models import BatchResult, RunStatus
    from aggregation.selectors import batch_is_complete
    from annotation.models import Batch
    from verification.models import AdaptiveOverlap, Judgment

    last = dict(Judgment.objects.filter(batch_id__in=batch_ids).values("batch_id").annotate(t=Max("created_at"))
                .values_list("batch_id", "t"))
    done = dict(BatchResult.objects.filter(batch_id__in=batch_ids, run__status=RunStatus.SUCCEEDED)
                .values("batch_id").annotate(t=Max("run__started_at")).values_list("batch_id", "t"))
    # polled every 2 s: an unsettled adaptive batch is not complete, and a complete one stays so
    unsettled = set(AdaptiveOverlap.objects.filter(batch_id__in=batch_ids, settled=False).values_list("batch_id", flat=True))
    everything = True
    for batch in Batch.objects.filter(pk__in=batch_ids):
        if batch.pk in unsettled or (not (finished and batch.name in finished)
                                     and not batch_is_complete(batch_id=batch.pk, overlap=batch.overlap)):
            everything = False
            continue
        if finished is not None:
            finished.add(batch.name)
        if batch.pk not in done or (last.get(batch.pk) and done[batch.pk] < last[batch.pk]):
            everything = False
    return everything


def invariants(*, batch_ids: list[int], acknowledged: dict, errors: list, k_max: int) -> dict:
    """0 errors, 0 items over their allowance (k-max, or the slot's `needed`), acked = stored."""
    from django.db.models import Count, F, Q

    from annotation.models import Item
    from verification.models import Judgment
    from verification.queue import judgments_towards_k

    counted = Item.objects.filter(batch_id__in=batch_ids).annotate(n=Count("judgments", filter=judgments_towards_k()))
    over_k = counted.filter(Q(n__gt=k_max) | Q(n__gt=F("queue_slot__needed"))).count()
    stored = {str(k): v for k, v in Judgment.objects.filter(batch_id__in=batch_ids).values_list("idempotency_key", "id")}
    mismatched = sum(1 for key, pk in acknowledged.items() if stored.get(key) != pk)
    violations = []
    if errors:
        violations.append(f"{len(errors)} failed requests, e.g. {errors[:2]}")
    if over_k:
        violations.append(f"{over_k} items over their allowance")
    if len(stored) != len(acknowledged) or mismatched:
        violations.append(f"{len(acknowledged)} acknowledged, {len(stored)} stored, {mismatched} different")
    return {"errors": len(errors), "over_k": over_k, "acknowledged": len(acknowledged), "stored": len(stored),
            "violations": violations}


def _budget(*, judgments: int, seconds: float, pay: float, wall: float | None, projected: bool) -> dict:
    return {"judgments": judgments, "verifier_hours": round(seconds / 3600, 3), "cost": round(judgments * pay, 2),
            "wall_seconds": None if wall is None else round(wall, 1), "projected": projected}


def budgets(*, batch_ids: list[int], tally: Tally, model: VerifierModel, pay: float, verification_seconds: float,
            policy: str) -> tuple[list[dict], dict]:
    """Per batch and in all: the run's policy (measured), fixed k=3 and k=5 (projected)."""
    from django.db.models import Count, Max, Min, Q

    from aggregation.selectors import current_batch_results
    from annotation.models import Batch, Item

    from verification.models import Judgment

    items = {row["batch_id"]: row for row in Item.objects.filter(batch_id__in=batch_ids, is_gold=False).values("batch_id")
             .annotate(n=Count("id"), retro=Count("id", filter=Q(task="retrospective"))).order_by()}
    judged = {row["batch_id"]: row for row in Judgment.objects.filter(batch_id__in=batch_ids).values("batch_id")
              .annotate(n=Count("id"), first=Min("created_at"), last=Max("created_at")).order_by()}
    rows = []
    for b in Batch.objects.filter(pk__in=batch_ids).order_by("name"):
        i, j = items.get(b.pk, {}), judged.get(b.pk, {})
        b.n_items, b.n_retro = i.get("n", 0), i.get("retro", 0)
        b.n_judgments, b.first, b.last = j.get("n", 0), j.get("first"), j.get("last")
        rows.append(b)
    results = {r.batch_id: r for r in current_batch_results().filter(batch_id__in=batch_ids)}
    rate = len(tally.acknowledged) / verification_seconds if verification_seconds else None
    per_batch, totals = [], {policy: [0, 0.0], "k3": [0, 0.0], "k5": [0, 0.0]}
    for b in rows:
        prosp = b.n_items - b.n_retro
        mean = b.n_retro * model.mean_seconds("retrospective") + prosp * model.mean_seconds("prospective")
        seconds = tally.seconds.get(b.name, 0.0)
        result = results.get(b.pk)
        row = {"batch": b.name, "items": b.n_items, "ac1": result.ac1 if result else None,
               "retained": result.retained if result else None,
               policy: _budget(judgments=b.n_judgments, seconds=seconds, pay=pay, projected=False,
                               wall=(b.last - b.first).total_seconds() if b.first else None)}
        totals[policy][0] += b.n_judgments
        totals[policy][1] += seconds
        for k in (3, 5):
            row[f"k{k}"] = _budget(judgments=k * b.n_items, seconds=k * mean, pay=pay, projected=True,
                                   wall=k * b.n_items / rate if rate else None)
            totals[f"k{k}"][0] += k * b.n_items
            totals[f"k{k}"][1] += k * mean
        per_batch.append(row)
    overall = {policy: _budget(judgments=totals[policy][0], seconds=totals[policy][1], pay=pay,
                               wall=verification_seconds, projected=False)}
    for k in (3, 5):
        n, seconds = totals[f"k{k}"]
        overall[f"k{k}"] = _budget(judgments=n, seconds=seconds, pay=pay, wall=n / rate if rate else None, projected=True)
    return per_batch, overall


def rehearse(*, directory: Path, model: VerifierModel, k_min: int = 2, k_max: int = 5, overlap: int | None = None,
             pay_per_item: float = 0.0, seed: int = 7, gunicorn_workers: int = 2, gunicorn_threads: int = 4,
             refresh_seconds: float = 2.0, dashboard_every: float = 5.0, timeout: float = 3600.0,
             stall_seconds: float = 120.0, analyze_every: float = 30.0,
             prefix: str = "rehearsal", log=print) -> dict:
    """Run the rehearsal (see the module's docstring); returns what it measured, JSON-ready."""
    from django.core.management import call_command

    from annotation.models import Batch, Item
    from verification.services import batch_open

    started = time.monotonic()
    phases = {}
    adaptive = overlap is None
    policy = f"adaptive_k{k_min}_{k_max}" if adaptive else f"fixed_k{overlap}"
    existing = set(Batch.objects.values_list("pk", flat=True))
    t = time.monotonic()
    call_command("import_dialtom", str(directory), stdout=open(os.devnull, "w"))
    batch_ids = sorted(set(Batch.objects.filter(items__isnull=False).values_list("pk", flat=True).distinct()) - existing)
    if not batch_ids:
        raise RuntimeError(f"{directory}: no new batch was imported (already imported, or no pool files)")
    phases["import"] = time.monotonic() - t
    names = dict(Batch.objects.filter(pk__in=batch_ids).values_list("pk", "name"))
    n_items = Item.objects.filter(batch_id__in=batch_ids).count()
    log(f"imported {n_items} items in {len(batch_ids)} batches ({phases['import']:.1f} s)")

    tokens, staff, cookie = _people(n=model.verifiers, pool=f"{prefix}-pool", prefix=prefix)
    with override_settings(DIALTOM_OVERLAP_REFRESH_SECONDS=refresh_seconds):
        for name in names.values():
            if adaptive:
                batch_open(name=name, k_min=k_min, k_max=k_max, pools=[f"{prefix}-pool"])
            else:
                batch_open(name=name, overlap=overlap, pools=[f"{prefix}-pool"])
    truths = item_truths(batch_ids=batch_ids, model=model, seed=seed)
    from rest_framework.authtoken.models import Token

    staff_token = Token.objects.get_or_create(user=staff)[0].key
    connection.close()  # the servers get their own connections; ours reopens on demand

    # persistent database connections, as in production (each request otherwise opens one), without
    # the health check's extra round trip per request (the rehearsal's PostgreSQL does not restart)
    # its own Celery queue: two rehearsals (or a test and a bench run) on one Redis must not take
    # each other's tasks, which would run against the other's database
    env = server_env(DIALTOM_OVERLAP_REFRESH_SECONDS=refresh_seconds, DIALTOM_AGGREGATE_SWEEP_SECONDS=15, CONN_MAX_AGE=60,
                     CONN_HEALTH_CHECKS=0, CELERY_TASK_DEFAULT_QUEUE=f"{settings.CELERY_TASK_DEFAULT_QUEUE}-{prefix}-{uuid.uuid4().hex[:8]}")
    tally, done, finished = Tally(), threading.Event(), set()
    with tempfile.TemporaryDirectory(prefix="rehearsal-") as tmp, \
            Servers(env=env, workers=gunicorn_workers, threads=gunicorn_threads, log_dir=Path(tmp)) as servers:
        probe = DashboardProbe(base_url=servers.url, cookie=cookie, every=dashboard_every, done=done)
        probe.start()
        statistics = StatisticsKeeper(every=analyze_every, done=done)
        statistics.start()
        t = time.monotonic()
        verifiers = [SimulatedVerifier(n=i, token=tok, base_url=servers.url, batches=sorted(names.values()), truths=truths,
                                       model=model, tally=tally, done=done, seed=seed, finished=finished,
                                       backoff=refresh_seconds) for i, tok in enumerate(tokens)]
        for v in verifiers:
            v.start()
        try:
            progress = {"n": -1, "at": time.monotonic()}

            def all_aggregated():
                if len(tally.acknowledged) != progress["n"]:
                    progress.update(n=len(tally.acknowledged), at=time.monotonic())
                elif time.monotonic() - progress["at"] > stall_seconds and _short(batch_ids):
                    # a stall: items still short and no judgment comes (with none short, the
                    # last refits and aggregation runs are what is left: `timeout` bounds them)
                    raise RuntimeError(_stalled(batch_ids, stall_seconds))
                return _batches_aggregated(batch_ids, finished=finished)

            _wait(all_aggregated, timeout=timeout, every=2.0, what="verification and aggregation")
        finally:
            done.set()
            for v in verifiers:
                v.join(timeout=60)
            probe.join(timeout=60)
            statistics.join(timeout=60)
        phases["verification_and_aggregation"] = time.monotonic() - t
        verification_seconds = phases["verification_and_aggregation"]
        log(f"{len(tally.acknowledged)} judgments, every batch aggregated ({verification_seconds:.1f} s)")

        staff_client = LoopbackClient(servers.url, {"Authorization": f"Token {staff_token}", "Content-Type": "application/json"})
        t = time.monotonic()
        version = f"{prefix}-{uuid.uuid4().hex[:6]}"
        status, data, _ = staff_client.request("POST", "/api/v1/releases/", {"version": version, "acknowledge_warnings": True})
        if status != 202:
            raise RuntimeError(f"release: {status} {data[:300]!r}")
        _wait(lambda: _release_ready(staff_client, version), timeout=timeout, every=1.0, what="the release build")
        phases["release"] = time.monotonic() - t
        log(f"release {version} ready ({phases['release']:.1f} s)")

        t = time.monotonic()
        from releases.models import ReleaseItem

        rng = random.Random(seed)
        audited = ReleaseItem.objects.filter(release__version=version).values_list("item__item_id", "item__variant")
        predictions = [{"item_id": item_id, "prediction": rng.choice(LETTERS + (("NOTA",) if v == "counterfactual" else ()))}
                       for item_id, v in audited]
        name = f"random-baseline-{version}"
        status, data, _ = staff_client.request("POST", "/api/v1/models/", {
            "name": name, "model_name": "Random baseline", "release": version, "predictions": predictions})
        if status != 202:
            raise RuntimeError(f"baseline: {status} {data[:300]!r}")
        baseline = _wait(lambda: (lambda r: r if r["status"] == "succeeded" else None)(
            json.loads(staff_client.request("GET", f"/api/v1/models/{name}/")[1])), timeout=timeout, what="the baseline")
        phases["baseline"] = time.monotonic() - t

        t = time.monotonic()
        status, data, _ = staff_client.request("GET", f"/api/v1/study-report/?release={version}")
        if status != 200:
            raise RuntimeError(f"study report: {status} {data[:300]!r}")
        report = json.loads(data)
        phases["study_report"] = time.monotonic() - t
        staff_client.close()

    per_batch, overall = budgets(batch_ids=batch_ids, tally=tally, model=model, pay=pay_per_item,
                                 verification_seconds=verification_seconds, policy=policy)
    return {
        "directory": str(directory),
        "policy": policy,
        "model": model.as_dict(),
        "pay_per_item": pay_per_item,
        "items": n_items,
        "batches": len(batch_ids),
        "wall_seconds": round(time.monotonic() - started, 1),
        "phases": {k: round(v, 1) for k, v in phases.items()},
        "budget": overall,
        "per_batch": per_batch,
        "dashboard": probe.summary(),
        "postgres": statistics.summary(),
        "invariants": invariants(batch_ids=batch_ids, acknowledged=tally.acknowledged, errors=tally.errors,
                                 k_max=k_max if adaptive else overlap),
        "settled_short": _settled_short(batch_ids),
        "release": version,
        "baseline": {"name": name, "overall": (baseline.get("scores") or {}).get("overall")},
        "report": {
            "by_task": [{k: r[k] for k in ("task", "items", "retained", "retention", "ac1", "ac1_ci", "ac1_batches")}
                        for r in report["verification"]["by_task"]],
        },
    }


def summary_lines(result: dict) -> list[str]:
    """The table `rehearse` prints."""
    lines = [f"| {result['items']} items, {result['batches']} batches, {result['model']['verifiers']} verifiers | "
             "judgments | verifier-hours | cost | wall (s) |", "|---|---|---|---|---|"]
    for name, b in result["budget"].items():
        label = f"{name}{' (projected)' if b['projected'] else ''}"
        lines.append(f"| {label} | {b['judgments']:,} | {b['verifier_hours']:.1f} | {b['cost']:,.2f} | {b['wall_seconds']} |")
    dash, inv = result["dashboard"], result["invariants"]
    lines.append(f"| dashboard p50 / p95 / max (ms), n | {dash['p50_ms']} / {dash['p95_ms']} / {dash['max_ms']}, {dash['n']} ||||")
    lines.append(f"| errors / over k / acked / stored | {inv['errors']} / {inv['over_k']} / {inv['acknowledged']} / "
                 f"{inv['stored']} ||||")
    lines.append(f"| items settled short (nobody may take them) | {result.get('settled_short', 0)} ||||")
    pg = result.get("postgres") or {}
    if pg.get("autovacuum") == "off":
        lines.append(f"| PostgreSQL without autovacuum: ANALYZE by the rehearsal every {pg['analyze_every_seconds']:g} s | "
                     f"{pg['analyze_runs']} runs ||||")
    for row in result["report"]["by_task"]:
        b = row["ac1_batches"]
        lines.append(f"| {row['task']}: retention, AC1 [batches] | {row['retention']:.3f} | {row['ac1']:.3f} | "
                     f"[{b['min']:.2f}, {b['max']:.2f}] ||")
    lines.append(f"| wall time in all (s) | {result['wall_seconds']} ||||")
    return lines
