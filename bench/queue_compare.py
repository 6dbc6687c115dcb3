#!/usr/bin/env python
"""Side-by-side queue benchmark (issue 14): the studio, Label Studio and a bare view, in one run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom \\
      .venv/bin/python bench/queue_compare.py --studio-rev 811de43 --annotators 22,100 --seconds 40

Measures the next + submit cycle of each server under gunicorn with the same settings
(4 workers x 2 threads, gthread, keep-alive), on PostgreSQL (each server its own database
next to DATABASE_URL's: <name>_qc_after, _qc_before, _qc_ls, made and dropped here), with
CONN_MAX_AGE=600 persistent connections, at each number of concurrent annotators:

  studio (after)   the working tree: GET /api/v1/next-item/ -> POST /api/v1/judgments/,
                   token auth, items of ~200 words, overlap k=3
  studio submit-and-next   POST /api/v1/judgments/?next=1 carrying "next_item" (reported as
                   not available when the response has no next_item)
  studio (before)  the same at --studio-rev (a temporary `git worktree` in /tmp, same .venv)
  Label Studio     label-studio==1.23.* installed by this script into its own virtualenv
                   (<main clone>/bench/.venvs/label-studio, gitignored, kept for reruns), one
                   project per level with a 4-way Choices config, maximum_annotations=3,
                   tasks of ~200 words: GET /api/projects/P/next/ -> POST /api/tasks/T/annotations/
  bare             a Django view on the studio's settings doing one SQL round trip, no auth,
                   two GETs per pair

For each: requests/s, pairs/s, p50/p95/p99 per request and per pair, errors, CPU ms per pair
of the gunicorn master + workers and of PostgreSQL (this database's backends; all postgres
processes) from /proc, the load client's own CPU, over-assignments (items/tasks with more
than 3 judgments/annotations) and duplicates (the same annotator twice on one item). Prints
a markdown table and writes bench/results/queue_compare.md (and bench/out/queue_compare.json).
Loopback only; every phase is bounded by --seconds; servers, databases and worktrees are
removed at the end (--keep-db keeps the databases).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPARE = ROOT / "bench" / "compare"
sys.path.insert(0, str(COMPARE))

import qc_proc  # noqa: E402
from qc_load import run_phase  # noqa: E402

LS_VERSION = "1.23.*"
LS_LABEL_CONFIG = (
    '<View><Text name="text" value="$text"/><Choices name="choice" toName="text" choice="single">'
    '<Choice value="A"/><Choice value="B"/><Choice value="C"/><Choice value="D"/></Choices></View>'
)
GOALS = {"vs_before": 3.0, "vs_ls": 20.0, "cpu_ms": 10.0}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def percentile(values, q):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gunicorn_pin() -> str:
    for line in (ROOT / "requirements" / "base.txt").read_text().splitlines():
        if line.lower().startswith("gunicorn=="):
            return line.strip()
    return "gunicorn"


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------- databases

class Databases:
    def __init__(self, base_url: str):
        self.base_url = base_url
        self.prefix = base_url.rsplit("/", 1)[0]
        self.base_name = base_url.rsplit("/", 1)[1].split("?")[0]
        import psycopg

        self.admin = psycopg.connect(self.prefix + "/postgres", autocommit=True)
        self.made: list[str] = []

    def create(self, suffix: str) -> tuple[str, str]:
        name = f"{self.base_name}_qc_{suffix}"
        self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.admin.execute(f'CREATE DATABASE "{name}"')
        self.made.append(name)
        return name, f"{self.prefix}/{name}"

    def backend_pids(self, name: str) -> list[int]:
        rows = self.admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [name]).fetchall()
        return [r[0] for r in rows]

    def query(self, name: str, sql: str, params=()) -> list[tuple]:
        import psycopg

        with psycopg.connect(f"{self.prefix}/{name}", autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def execute(self, name: str, sql: str) -> None:
        import psycopg

        with psycopg.connect(f"{self.prefix}/{name}", autocommit=True) as conn:
            conn.execute(sql)

    def drop_all(self) -> None:
        for name in self.made:
            try:
                self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            except Exception as exc:  # noqa: BLE001
                log(f"could not drop {name}: {exc}")
        self.admin.close()


# ---------------------------------------------------------------- servers

class Gunicorn:
    """One gunicorn (its own process group), with the settings every server here shares."""

    def __init__(self, name: str, gunicorn_bin: Path, app: str, *, env: dict, cwd: Path, args, health: tuple[str, dict]):
        self.name, self.port = name, free_port()
        self.log_file = tempfile.NamedTemporaryFile(prefix=f"qc-{name}-", suffix=".log", delete=False)
        cmd = [str(gunicorn_bin), app, "--bind", f"127.0.0.1:{self.port}", "--workers", str(args.workers),
               "--threads", str(args.threads), "--worker-class", "gthread", "--keep-alive", "30",
               "--timeout", "120", "--graceful-timeout", "5", "--log-level", "warning"]
        self.proc = subprocess.Popen(cmd, env=env, cwd=str(cwd), stdout=self.log_file, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        path, headers = health
        deadline = time.time() + 240
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name}: gunicorn exited; log {self.log_file.name}:\n{self.tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("GET", path, headers=headers)
                if conn.getresponse().status == 200:
                    conn.close()
                    return
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"{name}: gunicorn did not answer {path} with 200; log {self.log_file.name}:\n{self.tail()}")

    def tail(self) -> str:
        return Path(self.log_file.name).read_text(errors="replace")[-3000:]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        Path(self.log_file.name).unlink(missing_ok=True)


def call(port: int, method: str, path: str, *, token: str | None = None, body=None, timeout: float = 600) -> tuple[int, object]:
    """A plain synchronous request for setup and probes."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": f"Token {token}"} if token else {}
    payload = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        payload = json.dumps(body)
    conn.request(method, path, body=payload, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    try:
        return response.status, json.loads(data) if data else None
    except ValueError:
        return response.status, data[:300]


# ---------------------------------------------------------------- measuring

class Target:
    """One row of the table: a server, a mode and a level, measured in one or more rounds."""

    def __init__(self, *, server: str, mode: str, n: int, gunicorn: Gunicorn, db_name: str, spec: dict, tokens: list[str],
                 check=None):
        self.server, self.mode, self.n, self.gunicorn, self.db_name = server, mode, n, gunicorn, db_name
        self.spec, self.tokens, self.check = spec, tokens, check
        self.raw = {"window_s": 0.0, "requests": 0, "pairs": 0, "latencies": {}, "pair_ms": [], "statuses": {},
                    "errors": 0, "error_samples": [], "exhausted": 0, "server_cpu_s": 0.0, "pg_db_cpu_s": 0.0,
                    "pg_all_cpu_s": 0.0, "client_cpu_s": 0.0, "client_procs": 0, "rounds": 0}

    def measure(self, dbs: "Databases", args, seconds: float) -> None:
        postmaster = qc_proc.postmaster_pid()
        snaps = []

        def snapshot():
            table = qc_proc.processes()
            snaps.append({"gunicorn": qc_proc.tree_cpu(self.gunicorn.pid, table),
                          "pg_all": qc_proc.tree_cpu(postmaster, table) if postmaster else 0.0,
                          "backends": qc_proc.backends_cpu(dbs.backend_pids(self.db_name), table)})

        procs = args.client_procs or (1 + (self.n - 1) // 50)
        tally = run_phase({**self.spec, "port": self.gunicorn.port}, self.tokens, seconds=seconds, warmup=args.warmup,
                          procs=procs, on_open=snapshot, on_close=snapshot)
        first, last = snaps
        raw = self.raw
        raw["server_cpu_s"] += last["gunicorn"] - first["gunicorn"]
        raw["pg_all_cpu_s"] += last["pg_all"] - first["pg_all"]
        raw["pg_db_cpu_s"] += sum(cpu - first["backends"].get(pid, 0.0) for pid, cpu in last["backends"].items())
        raw["window_s"] += tally["window_s"]
        raw["client_cpu_s"] += tally["client_cpu_s"]
        raw["client_procs"] = tally["client_procs"]
        raw["rounds"] += 1
        for name in ("requests", "pairs", "exhausted"):
            raw[name] += tally[name]
        raw["errors"] += tally["n_errors"]
        raw["error_samples"] = (raw["error_samples"] + tally["errors"])[:10]
        raw["pair_ms"] += tally["pair_ms"]
        for kind, values in tally["latencies"].items():
            raw["latencies"].setdefault(kind, []).extend(values)
        for key, count in tally["statuses"].items():
            raw["statuses"][key] = raw["statuses"].get(key, 0) + count

    def row(self, dbs: "Databases") -> dict:
        raw, pairs, window = self.raw, self.raw["pairs"], self.raw["window_s"] or float("nan")
        all_ms = [ms for values in raw["latencies"].values() for ms in values]
        per_pair = (lambda s: s * 1000 / pairs if pairs else None)  # noqa: E731
        row = {
            "server": self.server, "mode": self.mode, "annotators": self.n, "rounds": raw["rounds"], "window_s": window,
            "requests": raw["requests"], "pairs": pairs, "rps": raw["requests"] / window, "pairs_per_s": pairs / window,
            "req_p50": percentile(all_ms, 50), "req_p95": percentile(all_ms, 95), "req_p99": percentile(all_ms, 99),
            "pair_p50": percentile(raw["pair_ms"], 50), "pair_p95": percentile(raw["pair_ms"], 95),
            "pair_p99": percentile(raw["pair_ms"], 99),
            "by_kind": {kind: {"n": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95), "p99": percentile(v, 99)}
                        for kind, v in raw["latencies"].items()},
            "statuses": raw["statuses"], "errors": raw["errors"], "error_samples": raw["error_samples"],
            "exhausted": raw["exhausted"],
            "server_cpu_s": raw["server_cpu_s"], "pg_db_cpu_s": raw["pg_db_cpu_s"], "pg_all_cpu_s": raw["pg_all_cpu_s"],
            "server_cpu_ms_per_pair": per_pair(raw["server_cpu_s"]), "pg_db_cpu_ms_per_pair": per_pair(raw["pg_db_cpu_s"]),
            "pg_all_cpu_ms_per_pair": per_pair(raw["pg_all_cpu_s"]),
            "client_cpu_s": raw["client_cpu_s"], "client_cpu_ms_per_pair": per_pair(raw["client_cpu_s"]),
            "client_core_share": raw["client_cpu_s"] / window, "client_procs": raw["client_procs"],
            "over_assigned": None, "duplicates": None,
        }
        if self.check is not None:
            row.update(self.check())
        return row


# ---------------------------------------------------------------- the studio

def studio_tree_for_rev(rev: str) -> Path:
    sha = git("rev-parse", "--short", f"{rev}^{{commit}}")
    tree = Path(tempfile.gettempdir()) / f"studio-{sha}-{os.getpid()}"
    if tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
    git("worktree", "add", "--detach", str(tree), sha)
    if (ROOT / "node_modules").exists():
        (tree / "node_modules").symlink_to(ROOT / "node_modules")
    return tree


def studio_env(db_url: str, tag: str, tree: Path) -> dict:
    prefix = os.environ.get("CACHE_KEY_PREFIX", "dialtom-test")
    queue = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "dialtom-test")
    return {
        **os.environ, "DATABASE_URL": db_url, "DJANGO_SETTINGS_MODULE": "qc_studio_settings",
        "PYTHONPATH": f"{tree}{os.pathsep}{COMPARE}", "CONN_MAX_AGE": "600",
        "CACHE_KEY_PREFIX": f"{prefix}-qc-{tag}", "CELERY_TASK_DEFAULT_QUEUE": f"{queue}-qc-{tag}",
    }


def studio_check(dbs: "Databases", db_name: str, batches: list[str]) -> dict:
    rows = dbs.query(db_name, """
        WITH b AS (SELECT id, overlap FROM annotation_batch WHERE name = ANY(%s)),
             per_item AS (SELECT j.batch_id, j.item_id, count(*) AS n FROM verification_judgment j JOIN b ON j.batch_id = b.id
                          GROUP BY j.batch_id, j.item_id)
        SELECT (SELECT count(*) FROM per_item JOIN b ON per_item.batch_id = b.id WHERE per_item.n > b.overlap),
               (SELECT count(*) FROM (SELECT 1 FROM verification_judgment j JOIN b ON j.batch_id = b.id
                                      GROUP BY j.item_id, j.verifier_id HAVING count(*) > 1) d),
               (SELECT count(*) FROM verification_judgment j JOIN b ON j.batch_id = b.id),
               (SELECT count(*) FROM annotation_item i JOIN b ON i.batch_id = b.id)""", [batches])
    over, dup, stored, items = rows[0]
    return {"over_assigned": over, "duplicates": dup, "stored": stored, "items": items}


def probe_submit_and_next(port: int, token: str, batch: str) -> tuple[bool, str]:
    status, item = call(port, "GET", f"/api/v1/next-item/?batch={batch}", token=token)
    if status != 200:
        return False, f"next-item answered {status}"
    status, body = call(port, "POST", "/api/v1/judgments/?next=1", token=token,
                        body={"claim": item["claim"], "choice": "A", "idempotency_key": str(uuid.uuid4())})
    if status != 201:
        return False, f"POST ?next=1 answered {status}: {str(body)[:200]}"
    if not isinstance(body, dict) or "next_item" not in body:
        return False, "the judgment's response has no next_item"
    return True, "available"


class Studio:
    """The studio of one source tree: its database, seeded, and its gunicorn."""

    def __init__(self, dbs: "Databases", args, *, tag: str, tree: Path, label: str):
        self.dbs, self.tag, self.tree, self.label = dbs, tag, tree, label
        self.chains = {(n, mode): [f"qc-{n}-{mode}-b{i:02d}" for i in range(args.batches)]
                       for n in args.levels for mode in ("ns", "sn")}
        batches = [name for chain in self.chains.values() for name in chain]
        self.db_name, db_url = dbs.create(tag)
        log(f"{label}: seeding {self.db_name} ({len(batches)} batches x {args.batch_items} items of ~200 words, k=3)")
        self.env = studio_env(db_url, tag, tree)
        setup = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "python"), str(COMPARE / "studio_setup.py"), "--tree", str(tree),
             "--batches", ",".join(batches), "--items", str(args.batch_items), "--annotators", str(max(args.levels))],
            env={**self.env, "DJANGO_SETTINGS_MODULE": "dialtom_site.settings.test"}, cwd=str(tree),
            capture_output=True, text=True)
        if setup.returncode != 0:
            raise RuntimeError(f"{label}: setup failed:\n{setup.stderr[-3000:]}")
        self.tokens = json.loads(setup.stdout.strip().splitlines()[-1])["tokens"]
        self.gunicorn = Gunicorn(f"studio-{tag}", ROOT / ".venv" / "bin" / "gunicorn", "dialtom_site.wsgi:application",
                                 env=self.env, cwd=tree, args=args, health=("/bench/bare-sql/", {}))

    def queue_target(self, n: int) -> Target:
        return Target(server=self.label, mode="next + submit", n=n, gunicorn=self.gunicorn, db_name=self.db_name,
                      spec={"kind": "studio", "batches": self.chains[n, "ns"]}, tokens=self.tokens[:n],
                      check=lambda: studio_check(self.dbs, self.db_name, self.chains[n, "ns"]))

    def submit_and_next_target(self, n: int) -> Target | dict:
        ok, why = probe_submit_and_next(self.gunicorn.port, self.tokens[0], self.chains[n, "sn"][0])
        if not ok:
            log(f"{self.label}: submit-and-next not available ({why})")
            return {"server": self.label, "mode": "submit-and-next", "annotators": n, "not_available": why}
        return Target(server=self.label, mode="submit-and-next", n=n, gunicorn=self.gunicorn, db_name=self.db_name,
                      spec={"kind": "studio_next", "batches": self.chains[n, "sn"]}, tokens=self.tokens[:n],
                      check=lambda: studio_check(self.dbs, self.db_name, self.chains[n, "sn"]))

    def bare_target(self, n: int) -> Target:
        lo, hi = self.dbs.query(self.db_name, "SELECT min(id), max(id) FROM annotation_item")[0]
        return Target(server="bare view (1 SQL)", mode="2 GETs", n=n, gunicorn=self.gunicorn, db_name=self.db_name,
                      spec={"kind": "bare", "ids": [lo, hi]}, tokens=self.tokens[:n])

    def stop(self) -> None:
        self.gunicorn.stop()
        try:  # the follow-up messages no worker consumes here
            import redis

            queue = self.env["CELERY_TASK_DEFAULT_QUEUE"]
            redis.Redis.from_url(self.env.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")).delete(
                queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        except Exception:  # noqa: BLE001
            pass


# ---------------------------------------------------------------- Label Studio

def ls_venv_dir(args) -> Path:
    if args.ls_venv:
        return Path(args.ls_venv)
    common = Path(git("rev-parse", "--path-format=absolute", "--git-common-dir"))
    return common.parent / "bench" / ".venvs" / "label-studio"


def ls_install(venv: Path) -> tuple[str, Path]:
    """Install label-studio 1.23.x (and the studio's gunicorn pin) into its own venv, once."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import label_studio, gunicorn, os; from importlib.metadata import version; "
             "print(version('label-studio')); print(os.path.dirname(label_studio.__file__))"]
    done = subprocess.run(check, capture_output=True, text=True) if python.exists() else None
    if done is None or done.returncode != 0 or not done.stdout.startswith(LS_VERSION.rstrip("*")):
        log(f"installing label-studio=={LS_VERSION} into {venv} (once; a few minutes)")
        base_python = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base_python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"label-studio=={LS_VERSION}", gunicorn_pin()], check=True)
        done = subprocess.run(check, capture_output=True, text=True, check=True)
    version, path = done.stdout.split()[:2]
    return version, Path(path)


def ls_text(n: int) -> str:
    from studio_setup import dialogue

    return "\n".join(f"{t['speaker']}: {t['text']}" for t in dialogue(n))


def ls_check(dbs: "Databases", db_name: str, projects: list[int], tasks: int) -> dict:
    over, dup, stored = dbs.query(db_name, """
        SELECT (SELECT count(*) FROM (SELECT task_id FROM task_completion WHERE project_id = ANY(%s) AND NOT was_cancelled
                                      GROUP BY task_id HAVING count(*) > 3) o),
               (SELECT count(*) FROM (SELECT 1 FROM task_completion WHERE project_id = ANY(%s) AND NOT was_cancelled
                                      GROUP BY task_id, completed_by_id HAVING count(*) > 1) d),
               (SELECT count(*) FROM task_completion WHERE project_id = ANY(%s))""", [projects] * 3)[0]
    return {"over_assigned": over, "duplicates": dup, "stored": stored, "items": tasks}


class LabelStudio:
    """Label Studio 1.23 from its own venv: database migrated, people, one project per level."""

    def __init__(self, dbs: "Databases", args):
        self.dbs = dbs
        venv = ls_venv_dir(args)
        self.version, ls_path = ls_install(venv)
        self.label = f"Label Studio {self.version}"
        self.db_name, _ = dbs.create("ls")
        self.data_dir = tempfile.mkdtemp(prefix="qc-ls-data-")
        self.gunicorn = None
        env = {**os.environ, "DJANGO_DB": "default", "POSTGRE_NAME": self.db_name, "POSTGRE_USER": "postgres",
               "POSTGRE_PASSWORD": "", "POSTGRE_HOST": "127.0.0.1", "POSTGRE_PORT": "5432",
               "LABEL_STUDIO_BASE_DATA_DIR": self.data_dir, "CONN_MAX_AGE": "600", "DEBUG": "false", "SENTRY_DSN": "",
               "FRONTEND_SENTRY_DSN": "", "LATEST_VERSION_CHECK": "false", "LOG_LEVEL": "WARNING",
               "PYTHONPATH": f"{ls_path}{os.pathsep}{COMPARE}"}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        log(f"{self.label}: migrating {self.db_name} and making {max(args.levels)} annotators (a minute or two)")
        setup = subprocess.run([str(venv / "bin" / "python"), str(COMPARE / "ls_setup.py"), "--ls-path", str(ls_path),
                                "--annotators", str(max(args.levels))], env=env, cwd=self.data_dir, capture_output=True,
                               text=True)
        if setup.returncode != 0:
            raise RuntimeError(f"{self.label}: setup failed:\n{setup.stderr[-3000:]}")
        people = json.loads(setup.stdout.strip().splitlines()[-1])
        owner, self.tokens = people["owner_token"], people["tokens"]
        self.gunicorn = Gunicorn("ls", venv / "bin" / "gunicorn", "qc_ls_wsgi:application", env=env, cwd=Path(self.data_dir),
                                 args=args, health=("/api/projects/", {"Authorization": f"Token {owner}"}))
        self.projects, self.n_tasks = {n: [] for n in args.levels}, args.ls_projects * args.batch_items
        for n in args.levels:
            for p in range(args.ls_projects):
                status, project = call(self.gunicorn.port, "POST", "/api/projects/", token=owner, body={
                    "title": f"queue compare {n} #{p}", "label_config": LS_LABEL_CONFIG, "maximum_annotations": 3,
                    "show_overlap_first": True, "sampling": "Sequential sampling"})
                if status != 201:
                    raise RuntimeError(f"{self.label}: project creation answered {status}: {project}")
                self.projects[n].append(project["id"])
                log(f"{self.label}: importing {args.batch_items} tasks into project {project['id']} (its import API)")
                tasks = [{"text": ls_text(1_000_000 * n + 10_000 * p + i)} for i in range(args.batch_items)]
                status, body = call(self.gunicorn.port, "POST", f"/api/projects/{project['id']}/import", token=owner, body=tasks)
                if status != 201:
                    raise RuntimeError(f"{self.label}: import answered {status}: {body}")
        dbs.execute(self.db_name, "VACUUM ANALYZE")

    def target(self, n: int) -> Target:
        return Target(server=self.label, mode="next + submit", n=n, gunicorn=self.gunicorn, db_name=self.db_name,
                      spec={"kind": "ls", "projects": self.projects[n]}, tokens=self.tokens[:n],
                      check=lambda: ls_check(self.dbs, self.db_name, self.projects[n], self.n_tasks))

    def stop(self) -> None:
        if self.gunicorn is not None:
            self.gunicorn.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)


# ---------------------------------------------------------------- report

def fmt(value, digits=1):
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def table(rows: list[dict]) -> str:
    head = ("| server | mode | annotators | pairs/s | req/s | per request p50 / p95 / p99 (ms) | per pair p50 / p95 / p99 (ms) "
            "| errors | server CPU ms/pair | PG CPU ms/pair (this DB / all postgres) | client CPU ms/pair (core share) "
            "| over-assigned | duplicates |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    lines = [head]
    for r in rows:
        if r.get("not_available"):
            lines.append(f"| {r['server']} | {r['mode']} | {r['annotators']} | not available ({r['not_available']}) "
                         "| | | | | | | | | |")
            continue
        lines.append(
            f"| {r['server']} | {r['mode']} | {r['annotators']} | **{fmt(r['pairs_per_s'])}** | {fmt(r['rps'])} "
            f"| {fmt(r['req_p50'])} / {fmt(r['req_p95'])} / {fmt(r['req_p99'])} "
            f"| {fmt(r['pair_p50'])} / {fmt(r['pair_p95'])} / {fmt(r['pair_p99'])} | {r['errors']} "
            f"| **{fmt(r['server_cpu_ms_per_pair'])}** | {fmt(r['pg_db_cpu_ms_per_pair'])} / {fmt(r['pg_all_cpu_ms_per_pair'])} "
            f"| {fmt(r['client_cpu_ms_per_pair'])} ({r['client_core_share']:.0%}) "
            f"| {fmt(r['over_assigned'])} | {fmt(r['duplicates'])} |")
    return "\n".join(lines)


def statuses(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        if r.get("statuses"):
            counts = ", ".join(f"{k}: {v:,}" for k, v in sorted(r["statuses"].items()))
            lines.append(f"- {r['server']}, {r['mode']}, {r['annotators']}: {counts}")
    return "\n".join(lines)


def ratios(rows: list[dict], levels: list[int]) -> tuple[str, dict]:
    def find(server_prefix, mode, n):
        for r in rows:
            if r["server"].startswith(server_prefix) and r["mode"] == mode and r["annotators"] == n and not r.get("not_available"):
                return r
        return None

    lines, summary = [], {}
    for n in levels:
        after = find("studio after", "next + submit", n)
        sn = find("studio after", "submit-and-next", n)
        before = find("studio before", "next + submit", n)
        ls = find("Label Studio", "next + submit", n)
        bare = find("bare view", "2 GETs", n)
        best = max((r for r in (after, sn) if r), key=lambda r: r["pairs_per_s"], default=None)
        out = {}
        if best:
            out["best_mode"] = best["mode"]
            out["best_pairs_per_s"] = best["pairs_per_s"]
            out["best_cpu_ms"] = best["server_cpu_ms_per_pair"]
        if best and before:
            out["vs_before"] = best["pairs_per_s"] / before["pairs_per_s"]
        if after and before:
            out["vs_before_same_mode"] = after["pairs_per_s"] / before["pairs_per_s"]
        if best and ls and ls["pairs_per_s"]:
            out["vs_ls"] = best["pairs_per_s"] / ls["pairs_per_s"]
        if before and ls and ls["pairs_per_s"]:
            out["before_vs_ls"] = before["pairs_per_s"] / ls["pairs_per_s"]
        if best and bare:
            out["vs_bare"] = best["pairs_per_s"] / bare["pairs_per_s"]
            out["cpu_vs_bare"] = best["server_cpu_ms_per_pair"] / bare["server_cpu_ms_per_pair"]
        summary[n] = out

        def mark(ok):
            return "✅" if ok else "❌"

        parts = [f"**{n} annotators** (studio after = its faster mode, {out.get('best_mode', '–')}):"]
        if "vs_before" in out:
            parts.append(f"after / before throughput **{out['vs_before']:.2f}×** (goal ≥ {GOALS['vs_before']:.0f}× "
                         f"{mark(out['vs_before'] >= GOALS['vs_before'])}; next + submit alone {out['vs_before_same_mode']:.2f}×)")
        if "vs_ls" in out:
            parts.append(f"studio / Label Studio **{out['vs_ls']:.1f}×** (goal ≥ {GOALS['vs_ls']:.0f}× "
                         f"{mark(out['vs_ls'] >= GOALS['vs_ls'])}; before / LS {out.get('before_vs_ls', float('nan')):.1f}×)")
        if "vs_bare" in out:
            parts.append(f"studio / bare view {out['vs_bare']:.2f}× the pairs/s at {out['cpu_vs_bare']:.1f}× the server CPU per pair")
        if out.get("best_cpu_ms") is not None:
            parts.append(f"server CPU per pair **{out['best_cpu_ms']:.1f} ms** (goal ≤ {GOALS['cpu_ms']:.0f} ms "
                         f"{mark(out['best_cpu_ms'] <= GOALS['cpu_ms'])})")
        lines.append("- " + parts[0] + " " + "; ".join(parts[1:]) + ".")
    return "\n".join(lines), summary


def write_report(args, meta: dict, rows: list[dict], out: Path) -> str:
    ratio_text, summary = ratios(rows, args.levels)
    exhausted = [f"{r['server']} {r['mode']} at {r['annotators']}" for r in rows if r.get("exhausted")]
    text = f"""# Queue side by side: the studio, Label Studio and a bare view (issue 14)

`bench/queue_compare.py`, one run, {meta['date']}. Machine: {os.cpu_count()} cores shared by the
client and every server (and by whatever else ran: `/proc/loadavg` before the run
`{meta['loadavg']}`, after it `{meta.get('loadavg_after', '–')}`). Each server under gunicorn
{args.workers} workers × {args.threads} threads (gthread, keep-alive), PostgreSQL in its own database,
`CONN_MAX_AGE=600`, all of them up at once; each row is {args.seconds:g} s measured in {args.rounds}
interleaved slices (every server's slice 1, then every server's slice 2, ...), so that a change in
the machine's load falls on every server alike. In a slice the annotators work without a pause
for {args.warmup:g} s of warm-up and then the measured window: only the requests and pairs that
complete in the window count, and CPU is read from `/proc` when it opens and closes (a steady
state: no ramp-up, no tail). A pair is one next + one submit (for the bare view: two GETs of a one-row
`SELECT` by primary key, no auth). Studio: token auth, items with ~200-word contexts, k=3, batches
of {args.batch_items} items (the corpus has ~500 per batch), {args.batches} per row: an annotator told
that nothing is left for it moves on to the next. Label Studio {meta.get('ls_version', '–')}: its own
virtualenv, community edition, 4-way Choices config, `maximum_annotations=3`, sequential sampling
with `show_overlap_first`, projects of {args.batch_items} tasks of ~200 words ({args.ls_projects} per row,
likewise), legacy `Token` auth. Both seeded databases are `VACUUM ANALYZE`d before the run.

- **studio before** = `{meta.get('before_rev', '–')}` (a temporary `git worktree`, its own database);
  **studio after** = `{meta['after_rev']}` ({'a temporary `git worktree` of `' + args.after_rev + '`' if args.after_rev else 'the tree the bench ran from'}).
- CPU per pair from `/proc` (user + system): the gunicorn master and workers; PostgreSQL as the
  backends connected to that server's database, and as every postgres process (which also
  counts whatever else the machine's PostgreSQL was doing). The client is one asyncio process
  per ≤ 50 annotators (plain HTTP/1.1 keep-alive on asyncio streams); its CPU is shown per pair
  and as a share of one core.
- Over-assigned: items with more judgments than the batch's k (tasks with more than 3
  non-cancelled annotations); duplicates: one annotator twice on one item/task.

{table(rows)}

{ratio_text}

Responses by kind and status in the windows (errors = anything but 200/201/204, and the studio's
200 for a submit, which means an idempotent replay):

{statuses(rows)}
{('- Ran out of items/tasks (annotators told nothing is left): ' + ', '.join(exhausted) + '; raise --items / --ls-tasks.') if exhausted else ''}

Rerun (a few minutes; the Label Studio virtualenv is installed on the first run only):

```
{meta['command']}
```
"""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    json_out = ROOT / "bench" / "out" / "queue_compare.json"
    json_out.parent.mkdir(parents=True, exist_ok=True)
    saved = {k: v for k, v in vars(args).items() if k != "from_json"}
    json_out.write_text(json.dumps({"meta": meta, "args": saved, "rows": rows, "summary": summary}, indent=1, default=str))
    return text


# ---------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", default="22,100", help="concurrency levels, comma-separated")
    parser.add_argument("--seconds", type=float, default=40, help="measured seconds per row (split over --rounds)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="each row is measured in this many interleaved slices, so that a change in the shared "
                             "machine's load falls on every server alike")
    parser.add_argument("--warmup", type=float, default=8, help="unmeasured seconds of load before each slice's window")
    parser.add_argument("--studio-rev", default="811de43", help="the 'before' commit ('none' to skip)")
    parser.add_argument("--after-rev", help="measure this commit as 'after' (a temporary worktree) instead of this tree")
    parser.add_argument("--servers", default="before,after,ls,bare",
                        help="which to run: before, after (with submit-and-next), ls, bare")
    parser.add_argument("--batch-items", type=int, default=500,
                        help="items per studio batch and tasks per Label Studio project (the corpus: 41,601 items in 84 "
                             "batches, ~500 each)")
    parser.add_argument("--batches", type=int, default=10,
                        help="studio batches per row (an annotator moves on to the next when one has nothing left for it)")
    parser.add_argument("--ls-projects", type=int, default=2, help="Label Studio projects per level (likewise)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--client-procs", type=int, default=0, help="load client processes (0: one per 50 annotators)")
    parser.add_argument("--ls-venv", help="Label Studio's virtualenv (default: <main clone>/bench/.venvs/label-studio)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "queue_compare.md"))
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--from-json", help="only write the report again from a run's bench/out/queue_compare.json")
    args = parser.parse_args()
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        for name, value in saved.get("args", {}).items():
            setattr(args, name, value)
        print(write_report(args, saved["meta"], saved["rows"], Path(args.out)))
        return 0
    args.levels = [int(x) for x in args.annotators.split(",")]
    servers = set(args.servers.split(","))
    if args.studio_rev.lower() == "none":
        servers.discard("before")

    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "loadavg": Path("/proc/loadavg").read_text().strip()}
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", ".", ":!bench"], cwd=ROOT).returncode != 0
    meta["after_rev"] = git("rev-parse", "--short", "HEAD") + (" + uncommitted changes" if dirty else "")
    given = [a for a in sys.argv[1:] if not a.startswith("--out")]
    if not any(a.startswith("--studio-rev") for a in given):
        given = ["--studio-rev", args.studio_rev, *given]
    meta["command"] = (f"DATABASE_URL={os.environ.get('DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/dialtom')} "
                       ".venv/bin/python bench/queue_compare.py " + " ".join(shlex.quote(a) for a in given))
    log(f"load before: {meta['loadavg']}")
    dbs = Databases(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dialtom"))
    before_tree = after_tree = None
    started: list = []
    rows: list[dict] = []
    try:
        before = after = ls = None
        if "before" in servers:
            before_tree = studio_tree_for_rev(args.studio_rev)
            meta["before_rev"] = git("rev-parse", "--short", "HEAD", cwd=before_tree)
            before = Studio(dbs, args, tag="before", tree=before_tree, label=f"studio before ({meta['before_rev']})")
            started.append(before)
        if servers & {"after", "bare"}:
            if args.after_rev:
                after_tree = studio_tree_for_rev(args.after_rev)
                meta["after_rev"] = git("rev-parse", "--short", "HEAD", cwd=after_tree)
            after = Studio(dbs, args, tag="after", tree=after_tree or ROOT, label=f"studio after ({meta['after_rev']})")
            started.append(after)
        if "ls" in servers:
            ls = LabelStudio(dbs, args)
            started.append(ls)
            meta["ls_version"] = ls.version
        for n in args.levels:
            targets = []
            if before:
                targets.append(before.queue_target(n))
            if after and "after" in servers:
                targets.append(after.queue_target(n))
                sn = after.submit_and_next_target(n)
                targets.append(sn) if isinstance(sn, Target) else rows.append(sn)
            if ls:
                targets.append(ls.target(n))
            if after and "bare" in servers:
                targets.append(after.bare_target(n))
            for r in range(args.rounds):
                for target in targets:
                    log(f"{n} annotators, slice {r + 1}/{args.rounds}: {target.server}, {target.mode}")
                    target.measure(dbs, args, args.seconds / args.rounds)
            rows += [target.row(dbs) for target in targets]
    finally:
        for server in started:
            server.stop()
        if not args.keep_db:
            dbs.drop_all()
        for tree in (before_tree, after_tree):
            if tree is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
                shutil.rmtree(tree, ignore_errors=True)
                subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)
    meta["loadavg_after"] = Path("/proc/loadavg").read_text().strip()
    order = ("studio before", "studio after", "Label Studio", "bare view")
    rows.sort(key=lambda r: (r["annotators"], next((i for i, o in enumerate(order) if r["server"].startswith(o)), 9),
                             r["mode"] != "next + submit"))
    text = write_report(args, meta, rows, Path(args.out))
    print(text)
    studio = [r for r in rows if r["server"].startswith("studio")]
    return 1 if any(r.get("errors") or r.get("over_assigned") or r.get("duplicates") for r in studio) else 0


if __name__ == "__main__":
    raise SystemExit(main())
