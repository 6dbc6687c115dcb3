"""The DialToM authors' written inferences (written_inference.csv + combined_written_data.json),
imported as the accepted references of a closed reference set."""
import csv
import hashlib
import io
import re
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from accounts.models import Role
from annotation.models import Attribute, Domain
from annotation import dialtom
from annotation.parsers import InputError, iter_json_object, lone_surrogate_field, read_text, remove_nul
from annotation.authors import contexts_ensure
from annotation.imported import already_imported, file_hashes, imported_record
from annotation.services import domains_ensure

from .models import (
    LIVE_ASSIGNMENT,
    AssignmentStatus,
    Reference,
    ReferenceAssignment,
    ReferenceSeat,
    ReferenceSet,
    ReferenceSetContext,
    ReferenceSetStatus,
    ReferenceSubmission,
)
from .services import MAX_TEXT_CHARS


WRITTEN_INFERENCES_FILE = "written_inference.csv"
WRITTEN_CONTEXTS_FILE = "combined_written_data.json"
WRITTEN_COLUMNS = ("WorkerId", "dataset", "mental_state", "sub_id", "inferences")
WRITTEN_SET = "dialtom-written"
_WORKER_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def written_inference_files(directory) -> tuple[Path, Path] | None:
    """(inferences CSV, contexts JSON) when a directory holds both (or their `.sample` twins), else None."""
    directory = Path(directory)
    found = []
    for name in (WRITTEN_INFERENCES_FILE, WRITTEN_CONTEXTS_FILE):
        stem, ext = name.rsplit(".", 1)
        path = next((p for p in (directory / name, directory / f"{stem}.sample.{ext}") if p.is_file()), None)
        if path is None:
            return None
        found.append(path)
    return found[0], found[1]


def crowd_pseudonym(worker_id: str) -> str:
    """The studio's username for an authors' worker: a stable pseudonym, not the platform's WorkerId."""
    return "dialtom-w-" + hashlib.sha256(worker_id.encode()).hexdigest()[:10]


@dataclass
class _Written:
    line: int
    worker: str  # the pseudonym
    context_id: str
    attribute: str
    text: str


def _skip(path, line, key: str, field: str, reason: str) -> dict:
    """A row or entry not imported (or a warning): the shape of import_dialtom's `skipped`."""
    return {"file": Path(path).name, "line": line, "key": key, "field": field, "reason": reason}


def _refuse_if_strict(strict: bool, skipped: list[dict]) -> None:
    if strict and skipped:
        first = skipped[0]
        raise InputError(first["file"], first["line"], first["field"], first["reason"] + " (--strict: nothing imported)")


def _written_contexts(path: Path, skipped: list, warnings: list, domains: dict) -> dict[str, tuple[dict, dict]]:
    """combined_written_data.json -> context_id -> (context fields, where); bad entries go to `skipped`.

    The contexts are made as for the authors' other files (`annotation.dialtom.context_of`);
    `line` is the line of the dataset's key, `key` is `DATASET/session, window`."""
    out: dict[str, tuple[dict, dict]] = {}
    for line, dataset, entries in iter_json_object(path):
        code = dialtom.DOMAINS.get(str(dataset).upper())
        if code is None or not isinstance(entries, dict):
            skipped.append(_skip(path, line, str(dataset), "dataset", f"unknown dataset {dataset!r} (expected MI, ESC "
                                                                      "or PFG) or not an object of contexts"))
            continue
        for key, entry in entries.items():
            where = f"{dataset}/{key}"
            ctx, nul_fields = remove_nul(entry.get("ctx") if isinstance(entry, dict) else None)
            warnings.extend(_skip(path, line, where, "ctx" if f == "record" else f"ctx[{f}]",
                                  "NUL character removed (PostgreSQL cannot store it)") for f in nul_fields)
            try:
                if bad := lone_surrogate_field(ctx):
                    raise dialtom.Skip("ctx", f"contains a lone surrogate (an invalid \\ud800-\\udfff escape) at {bad}")
                context = dialtom.context_of(key, ctx, domains[code], source="dialtom-written")
            except dialtom.Skip as exc:
                skipped.append(_skip(path, line, where, exc.field, exc.reason))
                continue
            out[context["context_id"]] = (context, {"file": path, "line": line, "field": "ctx"})
    return out


def _written_rows(path: Path, contexts: dict, skipped: list, warnings: list, *, per_context: int) -> list[_Written]:
    """written_inference.csv -> the rows that can be references; the others go to `skipped` with their line."""
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in WRITTEN_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(path, 1, "header", f"missing column(s) {', '.join(missing)} "
                                            f"(expected {','.join(WRITTEN_COLUMNS)},wc)")
    rows: list[_Written] = []
    seen: dict[tuple[str, str, str], _Written] = {}
    writers: dict[tuple[str, str], int] = defaultdict(int)
    line = 1
    for record in reader:
        line, start = reader.line_num, line + 1  # a quoted field may span lines: report where the row starts
        worker_id = (record.get("WorkerId") or "").strip()
        dataset = (record.get("dataset") or "").strip()
        state = (record.get("mental_state") or "").strip()
        sub_id = (record.get("sub_id") or "").strip()
        inference = record.get("inferences") or ""
        problem = _written_row_problem(record, worker_id, dataset, state, sub_id, n_columns=len(reader.fieldnames))
        key = f"{dataset}/{sub_id}/{state}"
        if problem:
            skipped.append(_skip(path, start, key, *problem))
            continue
        code, attribute = dialtom.DOMAINS[dataset.upper()], dialtom.STATE_ATTRIBUTES[state.lower()]
        match = dialtom.RECORD_ID.match(sub_id)
        context_id = f"{code}-s{int(match.group(1)):04d}-w{int(match.group(2)):02d}"
        if context_id not in contexts:
            skipped.append(_skip(path, start, key, "sub_id", f"no context {dataset} {sub_id!r} in "
                                                             f"{WRITTEN_CONTEXTS_FILE} (or it was skipped)"))
            continue
        if "\x00" in inference:
            inference = inference.replace("\x00", "")
            warnings.append(_skip(path, start, key, "inferences", "NUL character removed (PostgreSQL cannot store it)"))
        inference = inference.strip()
        if not inference or len(inference) > MAX_TEXT_CHARS:
            skipped.append(_skip(path, start, key, "inferences",
                                 "empty" if not inference else f"longer than {MAX_TEXT_CHARS} characters"))
            continue
        worker = crowd_pseudonym(worker_id)
        unit = (worker, context_id, attribute)
        if unit in seen:
            before = seen[unit]
            skipped.append(_skip(path, start, key, "inferences", f"repeats line {before.line}" if before.text == inference
                                 else f"worker {worker_id} wrote another {state} inference for {dataset} {sub_id!r} "
                                      f"at line {before.line}"))
            continue
        if writers[(context_id, attribute)] >= per_context:
            skipped.append(_skip(path, start, key, "WorkerId", f"{dataset} {sub_id!r} / {state} has {per_context} "
                                                               "writers already (k)"))
            continue
        writers[(context_id, attribute)] += 1
        seen[unit] = row = _Written(start, worker, context_id, attribute, inference)
        rows.append(row)
    return rows


def _written_row_problem(record: dict, worker_id: str, dataset: str, state: str, sub_id: str, *,
                         n_columns: int) -> tuple[str, str] | None:
    """(field, reason) when a CSV row cannot be a reference by its own fields, else None."""
    if None in record or any(record.get(c) is None for c in WRITTEN_COLUMNS):
        return "row", f"expected {n_columns} columns"
    if not _WORKER_ID.match(worker_id):
        return "WorkerId", f"missing or not an id ({worker_id[:40]!r})"
    if dataset.upper() not in dialtom.DOMAINS:
        return "dataset", f"unknown dataset {dataset!r} (expected MI, ESC or PFG)"
    if state.lower() not in dialtom.STATE_ATTRIBUTES:
        return "mental_state", f"unknown state {state!r} (expected {', '.join(dialtom.STATES)})"
    if not dialtom.RECORD_ID.match(sub_id):
        return "sub_id", f"expected \"session, window\" like \"5, 2\" (got {sub_id!r})"
    return None


@transaction.atomic
def written_inferences_import(
    *, inferences: str | Path, contexts: str | Path, strict: bool = False, set_name: str = WRITTEN_SET,
    per_context: int = 3, force: bool = False,
) -> dict:
    """Import the authors' written inferences as accepted references of a closed reference set.

    `contexts` (combined_written_data.json) gives the dialogue windows: "session, window" keys map
    to context ids as in the release and pool import (`annotation.dialtom.context_of`) and missing
    contexts are created. Each CSV row is one reference of the unit (context, mental_state) by one
    worker; a worker's rows on a context are one accepted assignment with those attributes.
    Workers become inactive crowd-worker accounts named by a pseudonym of their WorkerId.

    A row that cannot be a reference is skipped and listed (`file`, `line`, `field`, `reason`);
    with `strict` the first such row refuses the whole import (InputError). One transaction;
    idempotent: a second run creates nothing. Two files whose content (sha256) was imported
    together before into the same set, no row skipped, are skipped (`annotation.imported`) unless `force`.
    """
    domains_ensure()
    inferences, contexts = Path(inferences), Path(contexts)
    hashes = file_hashes([inferences, contexts])
    options = {"set": set_name, "per_context": per_context}
    if not force and len(already_imported("written_inferences", options, hashes)) == len(hashes):
        return {"reference_set": set_name, "files": [], "unchanged": [inferences.name, contexts.name],
                "references": 0, "units": 0, "contexts": 0, "workers": 0, "by_domain": {},
                "created": {"references": 0, "assignments": 0, "contexts": 0, "workers": 0},
                "skipped": [], "warnings": []}
    skipped: list[dict] = []
    warnings: list[dict] = []
    domains = {d.code: d for d in Domain.objects.all()}
    found_contexts = _written_contexts(contexts, skipped, warnings, domains)
    rows = _written_rows(inferences, found_contexts, skipped, warnings, per_context=per_context)
    _refuse_if_strict(strict, skipped)

    used = {r.context_id for r in rows}
    context_pks, n_new_contexts = contexts_ensure({c: found_contexts[c] for c in sorted(used)})
    User = get_user_model()
    pseudonyms = sorted({r.worker for r in rows})
    existing_users = set(User.objects.filter(username__in=pseudonyms).values_list("username", flat=True))
    new_users = []
    for name in pseudonyms:
        if name not in existing_users:
            user = User(username=name, role=Role.CROWD_WORKER, is_active=False)
            user.set_unusable_password()
            new_users.append(user)
    User.objects.bulk_create(new_users)
    user_pks = dict(User.objects.filter(username__in=pseudonyms).values_list("username", "pk"))

    reference_set, _ = ReferenceSet.objects.get_or_create(
        name=set_name,
        defaults={"source": ReferenceSet.Source.AUTHORS, "status": ReferenceSetStatus.CLOSED, "per_context": per_context,
                  "seed": None},
    )
    if reference_set.source != ReferenceSet.Source.AUTHORS:
        raise InputError(inferences, "-", "reference_set", f"{set_name} exists and is not an import of the authors' "
                                                            "written inferences")
    by_context: dict[str, list[_Written]] = defaultdict(list)
    for r in rows:
        by_context[r.context_id].append(r)
    members = {m.context_id: m for m in ReferenceSetContext.objects.select_for_update().filter(reference_set=reference_set)}
    next_position = max((m.position for m in members.values()), default=-1) + 1
    new_members = []
    for context_id in sorted(by_context):
        wanted = {r.attribute for r in by_context[context_id]}
        member = members.get(context_pks[context_id])
        if member is None:
            new_members.append(ReferenceSetContext(
                reference_set=reference_set, context_id=context_pks[context_id], position=next_position,
                attributes=[a for a in Attribute.values if a in wanted],
            ))
            next_position += 1
        elif not wanted <= set(member.attributes):
            member.attributes = [a for a in Attribute.values if a in wanted | set(member.attributes)]
            member.save(update_fields=["attributes"])
    members.update({m.context_id: m for m in ReferenceSetContext.objects.bulk_create(new_members)})

    now = timezone.now()
    assignments = {
        (a.member_id, a.worker_id): a
        for a in ReferenceAssignment.objects.filter(member__reference_set=reference_set).filter(LIVE_ASSIGNMENT)
    }
    stored = {
        (r.assignment.member_id, r.assignment.worker_id, r.attribute): r.text
        for r in Reference.objects.filter(assignment__member__reference_set=reference_set).select_related("assignment")
    }
    seats_used: dict[tuple[int, str], set[int]] = defaultdict(set)
    for member_id, attribute, slot in ReferenceSeat.objects.filter(member__reference_set=reference_set).values_list(
        "member_id", "attribute", "slot"
    ):
        seats_used[(member_id, attribute)].add(slot)
    by_assignment: dict[tuple[int, int], list[_Written]] = defaultdict(list)
    for r in rows:
        member = members[context_pks[r.context_id]]
        key = (member.pk, user_pks[r.worker])
        before = stored.get((*key, r.attribute))
        if before is not None:
            if before != r.text:
                skipped.append(_skip(inferences, r.line, f"{r.context_id}/{r.attribute}", "inferences",
                                     "another text is stored for this worker, context and state (imported before)"))
            continue
        by_assignment[key].append(r)
    _refuse_if_strict(strict, skipped)
    new_assignments, submissions, references, seats = [], [], [], []
    members_by_pk = {m.pk: m for m in members.values()}
    for (member_id, worker_pk), new_rows in sorted(by_assignment.items()):
        member = members_by_pk[member_id]
        texts = {r.attribute: r.text for r in new_rows}
        if any(len(seats_used[(member_id, a)]) >= per_context for a in texts):
            skipped.extend(_skip(inferences, r.line, f"{r.context_id}/{r.attribute}", "WorkerId",
                                 "the unit has k writers already (imported before)") for r in new_rows)
            continue
        assignment = assignments.get((member_id, worker_pk))
        if assignment is None:
            assignment = ReferenceAssignment(
                member=member, worker_id=worker_pk, attributes=[a for a in Attribute.values if a in texts],
                status=AssignmentStatus.ACCEPTED, expires_at=now, submitted_at=now, reviewed_at=now,
                review_reason="imported from the authors' written_inference.csv",
            )
            new_assignments.append(assignment)
        else:  # a later file adds states to a worker's context
            assignment.attributes = [a for a in Attribute.values if a in set(assignment.attributes) | set(texts)]
            assignment.save(update_fields=["attributes"])
        submissions.append(ReferenceSubmission(
            assignment=assignment, texts=texts,
            idempotency_key=uuid.uuid5(uuid.NAMESPACE_URL, f"dialtom-written:{set_name}:{assignment.pk}:{sorted(texts)}"),
        ))
        for a, text in texts.items():
            references.append(Reference(assignment=assignment, attribute=a, text=text))
            slot = min(set(range(per_context)) - seats_used[(member_id, a)])
            seats_used[(member_id, a)].add(slot)
            seats.append(ReferenceSeat(member=member, attribute=a, slot=slot, assignment=assignment, worker_id=worker_pk))
    _refuse_if_strict(strict, skipped)
    ReferenceAssignment.objects.bulk_create(new_assignments)
    ReferenceSubmission.objects.bulk_create(submissions)
    Reference.objects.bulk_create(references)
    ReferenceSeat.objects.bulk_create(seats)
    created = {"assignments": len(new_assignments), "references": len(references)}

    units = {(r.context_id, r.attribute) for r in rows}
    if not skipped:  # files with rows skipped are read again next time (their problems listed again)
        imported_record("written_inferences", options, hashes, counts={**created, "contexts": n_new_contexts})
    return {
        "reference_set": reference_set.name,
        "files": [inferences.name, contexts.name],
        "unchanged": [],
        "references": len(rows),
        "units": len(units),
        "contexts": len(used),
        "workers": len(pseudonyms),
        "by_domain": dict(sorted(Counter(r.context_id.split("-", 1)[0] for r in rows).items())),
        "created": {"references": created["references"], "assignments": created["assignments"],
                    "contexts": n_new_contexts, "workers": len(new_users)},
        "skipped": skipped,
        "warnings": warnings,
    }
