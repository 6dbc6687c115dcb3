"""Importing a file whose content was already imported is skipped: an `ImportedFile` row
(content sha256, importer, options) is written in the import's transaction, and the next
run of the same importer with the same options skips a file with that hash (`force` imports
it again). The hash is of the bytes, so renaming or moving a file does not re-import it and
changing one byte does."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .models import ImportedFile


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def options_key(options: dict) -> str:
    """The options that change what an import writes, canonical (sorted JSON, no Nones)."""
    return json.dumps({k: v for k, v in sorted(options.items()) if v is not None}, separators=(",", ":"))


def file_hashes(paths) -> dict[Path, str]:
    return {Path(p): file_sha256(p) for p in paths}


def already_imported(importer: str, options: dict, hashes: dict[Path, str]) -> set[Path]:
    """Those of `hashes` (path -> sha256) whose content `importer` already imported with these options."""
    done = set(ImportedFile.objects.filter(importer=importer, options=options_key(options),
                                           sha256__in=set(hashes.values())).values_list("sha256", flat=True))
    return {p for p, h in hashes.items() if h in done}


def imported_record(importer: str, options: dict, hashes: dict[Path, str], counts: dict | None = None) -> None:
    """Record the files of `hashes` as imported: call it inside the import's transaction, after its writes."""
    key = options_key(options)
    ImportedFile.objects.bulk_create([
        ImportedFile(importer=importer, options=key, sha256=h, name=p.name, path=str(p), size=p.stat().st_size,
                     counts=counts or {})
        for p, h in hashes.items()
    ])


def unchanged_lines(report: dict):
    """The summary line of the files an import skipped as unchanged."""
    if report.get("unchanged"):
        yield (f"unchanged since imported, skipped: {', '.join(report['unchanged'])} "
               "(--force imports them again)")
