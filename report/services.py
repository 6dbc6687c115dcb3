"""Writes of the study report: its files, frozen into a release as it is built."""
from __future__ import annotations

import json
from pathlib import Path

from . import selectors, tables


def report_files_write(*, directory: Path, release, pairs: dict[int, int]) -> dict[str, int]:
    """Write report.json and report.tex of a release into `directory` (the release's build
    folder): the verification of the results it freezes, the references, and the runs scored
    on it so far (none while it is being built). Returns file name → rows (tables for .tex)."""
    report = selectors.study_report(release=release, pairs=pairs)
    json_name, tex_name = selectors.REPORT_FILES
    with open(directory / json_name, "w", encoding="utf-8") as handle:
        json.dump(report, handle, ensure_ascii=False, indent=2)
        handle.write("\n")
    (directory / tex_name).write_text(tables.render_latex(report), encoding="utf-8")
    n_tables = len(tables.report_tables(report))
    return {json_name: len(report["verification"]["by_task_domain"]), tex_name: n_tables}
