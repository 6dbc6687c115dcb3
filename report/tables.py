"""The study report as tables, and the tables as LaTeX, Markdown and CSV.

`report_tables` turns the report (`selectors.study_report`) into a list of tables whose
cells carry the printed text (formatted as in the paper), the raw value and the link to the
page the number comes from; the page, the LaTeX, the Markdown and the CSV all render these
same tables, so no format can disagree with another.

Formats as in the paper: counts with thousands separators; retention and accuracy in
percent with one decimal; AC1, Cramér's V and correlations with two decimals; CIs in
brackets; p-values with three decimals, "<0.001" below that; BLEU on 0–100 with one
decimal, ROUGE-L and BERTScore on 0–1 with three.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

DASH = "–"
TESTS = (
    ("domain_gap", "all", "χ² domains (all)"),
    ("domain_gap", "retrospective", "χ² domains (retro., hard)"),
    ("domain_gap", "prospective", "χ² domains (prosp., hard)"),
    ("retrospective_vs_prospective", None, "χ² retro. vs prosp. (hard)"),
    ("easy_vs_hard", None, "Mann–Whitney U easy vs hard"),
    ("counterfactual", None, "McNemar true vs counterfactual"),
)


@dataclass
class Cell:
    text: str
    value: object = None
    link: str | None = None


@dataclass
class Table:
    key: str
    title: str
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    note: str = ""


# --- numbers as the paper prints them ----------------------------------------------------------


def count(n) -> str:
    return DASH if n is None else f"{int(n):,}"


def percent(x) -> str:
    return DASH if x is None else f"{100 * x:.1f}"


def two(x) -> str:
    return DASH if x is None else f"{x:.2f}"


def three(x) -> str:
    return DASH if x is None else f"{x:.3f}"


def interval(low, high, fmt=two) -> str:
    return "" if low is None or high is None else f"[{fmt(low)}, {fmt(high)}]"


def p_value(p) -> str:
    if p is None:
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def with_interval(value, ci, fmt=two) -> str:
    if value is None:
        return DASH
    return f"{fmt(value)} {interval(*ci, fmt=fmt)}".strip() if ci else fmt(value)


# --- the tables -------------------------------------------------------------------------------


def _verification_table(key: str, title: str, labels: list[str], rows: list[dict]) -> Table:
    table = Table(key, title, [*(label.title() for label in labels), "Items", "Retained", "Retention (%)",
                               "AC1 [95% CI]", "AC1 per batch [min, max]", "Batches"])
    for row in rows:
        batches = row["ac1_batches"]
        link = row["links"]["items"]
        table.rows.append([
            *(Cell(str(row[label]), row[label]) for label in labels),
            Cell(count(row["items"]), row["items"], link),
            Cell(count(row["retained"]), row["retained"], link),
            Cell(percent(row["retention"]), row["retention"], link),
            Cell(with_interval(row["ac1"], row["ac1_ci"]), row["ac1"], link),
            Cell(interval(batches["min"], batches["max"]) or DASH, [batches["min"], batches["max"]],
                 batches.get("min_link")),
            Cell(count(batches["n"]), batches["n"]),
        ])
    return table


def _accuracy_table(key: str, title: str, runs: list[dict], columns: list[tuple[str, str, str]]) -> Table:
    table = Table(key, title, ["Run", *(label for _, _, label in columns)])
    for run in runs:
        cells = [Cell(run["name"], run["name"], run["links"]["run"])]
        for dimension, value, _ in columns:
            cell = run["accuracy"].get("overall") if dimension == "overall" else run["accuracy"].get(dimension, {}).get(value)
            if not cell or not cell.get("n"):
                cells.append(Cell(DASH))
                continue
            cells.append(Cell(with_interval(cell["rate"], cell["ci"], fmt=percent), cell["rate"], run["links"]["run"]))
        table.rows.append(cells)
    return table


def _test_cells(name: str, result: dict) -> tuple[str, object, str, int | None]:
    """(statistic text, statistic, effect text, n) of one stored test."""
    if name in ("domain_gap", "retrospective_vs_prospective"):
        return f"χ²({result['dof']}) = {two(result['chi2'])}", result["chi2"], f"V = {two(result['cramers_v'])}", result["n"]
    if name == "easy_vs_hard":
        effect = f"{percent(result['rate_easy'])} vs {percent(result['rate_hard'])}"
        return f"U = {result['u']:,.1f}", result["u"], effect, result["n_easy"] + result["n_hard"]
    statistic = f"{'χ²' if result['method'] == 'chi2' else 'b'} = {two(result['statistic'])}"
    return statistic, result["statistic"], f"{percent(result['rate_a'])} vs {percent(result['rate_b'])}", result["n"]


def _tests_table(runs: list[dict]) -> Table:
    table = Table("tests", "Statistical tests", ["Run", "Test", "Statistic", "p", "n", "Effect"])
    for run in runs:
        for name, sub, label in TESTS:
            result = run["tests"].get(name)
            if sub is not None:
                result = (result or {}).get(sub)
            if not result:
                continue
            statistic_text, statistic, effect, n = _test_cells(name, result)
            link = run["links"]["run"]
            table.rows.append([Cell(run["name"], run["name"], link), Cell(label), Cell(statistic_text, statistic, link),
                               Cell(p_value(result["p_value"]), result["p_value"], link), Cell(count(n), n), Cell(effect)])
    return table


def _correlation_table(report: dict) -> Table:
    leaderboard = report["links"]["leaderboard"]
    table = Table("correlations", "Per-model accuracy between domains",
                  ["Domains", "Pearson r", "p", "Spearman ρ", "p", "Models"])
    for row in report["evaluation"]["correlations"]:
        table.rows.append([
            Cell(f"{row['a']} – {row['b']}"),
            Cell(two(row.get("pearson_r")), row.get("pearson_r"), leaderboard),
            Cell(p_value(row.get("pearson_p")), row.get("pearson_p")),
            Cell(two(row.get("spearman_rho")), row.get("spearman_rho"), leaderboard),
            Cell(p_value(row.get("spearman_p")), row.get("spearman_p")),
            Cell(count(row["n"]), row["n"]),
        ])
    return table


def _references_table(report: dict) -> Table:
    section = report["references"]
    note = "" if section["bertscore"]["available"] else f"BERTScore: {section['bertscore']['reason']}."
    table = Table("references", "Model inferences against the crowd references",
                  ["Run", "Attribute", "BLEU", "ROUGE-L", "BERTScore", "Inferences"], note=note)
    for run in section["runs"]:
        link = run["links"]["run"]
        for row in run["by_attribute"]:
            bleu = DASH if row["bleu"] is None else f"{row['bleu']:.1f}"
            table.rows.append([Cell(run["name"], run["name"], link), Cell(row["attribute"]),
                               Cell(bleu, row["bleu"], link), Cell(three(row["rouge_l"]), row["rouge_l"], link),
                               Cell(three(row["bertscore"]), row["bertscore"]), Cell(count(row["n_contexts"]), row["n_contexts"])])
    return table


def report_tables(report: dict) -> list[Table]:
    verification = report["verification"]
    runs = report["evaluation"]["runs"] + report["evaluation"]["baselines"]
    present = {d: sorted({k for r in runs for k in r["accuracy"].get(d, {})}) for d in ("task", "domain", "attribute", "variant")}
    tables = [
        _verification_table("verification_task", "Verification per task", ["task"], verification["by_task"]),
        _verification_table("verification_task_domain", "Verification per task and domain", ["task", "domain"],
                            verification["by_task_domain"]),
        _verification_table("verification_task_attribute", "Verification per task and attribute", ["task", "attribute"],
                            verification["by_task_attribute"]),
        _verification_table("verification_attribute", "Verification per attribute", ["attribute"],
                            verification["by_attribute"]),
        _accuracy_table("accuracy_task", "Accuracy (%) per task and variant [95% Wilson CI]", runs,
                        [("overall", "", "Overall"), *(("task", t, t.title()) for t in present["task"]),
                         *(("variant", v, v.title()) for v in present["variant"])]),
        _accuracy_table("accuracy_domain", "Accuracy (%) per domain [95% Wilson CI]", runs,
                        [("domain", d, d.upper()) for d in present["domain"]]),
        _accuracy_table("accuracy_attribute", "Accuracy (%) per attribute [95% Wilson CI]", runs,
                        [("attribute", a, a.title()) for a in present["attribute"]]),
        _tests_table(runs),
        _correlation_table(report),
        _references_table(report),
    ]
    if report["evaluation"].get("note"):
        for table in tables[4:9]:
            table.note = report["evaluation"]["note"]
    return tables


# --- LaTeX --------------------------------------------------------------------------------------

_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--", "χ²": r"$\chi^2$", "ρ": r"$\rho$",
    "<": r"$<$", ">": r"$>$", "≥": r"$\geq$", "×": r"$\times$",
}


def latex_escape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        for token in ("χ²", *_LATEX_ESCAPES):
            if text.startswith(token, i):
                out.append(_LATEX_ESCAPES[token])
                i += len(token)
                break
        else:
            char = text[i]
            out.append(char if ord(char) < 256 else "?")  # T1 covers Latin-1
            i += 1
    return "".join(out)


def _latex_table(table: Table) -> str:
    align = "l" * (1 if table.columns[:1] else 0) + "".join(
        "l" if column in ("Task", "Domain", "Attribute", "Test", "Effect", "Domains") else "r" for column in table.columns[1:]
    )
    lines = [
        r"\begin{table}[ht]", r"\centering", r"\scriptsize", rf"\caption{{{latex_escape(table.title)}}}",
        rf"\label{{tab:{table.key.replace('_', '-')}}}", rf"\begin{{tabular}}{{{align}}}", r"\toprule",
        " & ".join(latex_escape(c) for c in table.columns) + r" \\", r"\midrule",
    ]
    if not table.rows:
        lines.append(rf"\multicolumn{{{len(table.columns)}}}{{l}}{{\emph{{{latex_escape(table.note or 'none')}}}}} \\")
    for row in table.rows:
        lines.append(" & ".join(latex_escape(cell.text) for cell in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if table.note and table.rows:
        lines.append(rf"\par\smallskip\emph{{{latex_escape(table.note)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines)


def render_latex(report: dict) -> str:
    """A whole document (article, booktabs) that compiles as it is."""
    title = f"DialToM study report ({report['results']})"
    parts = [
        r"\documentclass{article}",
        r"\usepackage[utf8]{inputenc}",
        r"\usepackage[T1]{fontenc}",
        r"\usepackage[margin=2cm,landscape]{geometry}",
        r"\usepackage{booktabs}",
        rf"\title{{{latex_escape(title)}}}",
        r"\date{" + latex_escape(report["generated_at"][:10]) + "}",
        r"\begin{document}",
        r"\maketitle",
    ]
    parts += [_latex_table(table) for table in report_tables(report)]
    parts.append(r"\end{document}")
    return "\n".join(parts) + "\n"


# --- Markdown and CSV ---------------------------------------------------------------------------


def _md(text: str) -> str:
    return text.replace("|", r"\|")


def render_markdown(report: dict) -> str:
    out = [f"# DialToM study report ({report['results']})", ""]
    for table in report_tables(report):
        out += [f"## {table.title}", "", "| " + " | ".join(table.columns) + " |",
                "|" + "|".join("---" for _ in table.columns) + "|"]
        for row in table.rows:
            out.append("| " + " | ".join(f"[{_md(c.text)}]({c.link})" if c.link else _md(c.text) for c in row) + " |")
        if table.note:
            out += ["", f"_{table.note}_"]
        out.append("")
    return "\n".join(out)


def render_csv(report: dict) -> str:
    """Long format: one row a number, with its table, row, column, printed text, value and link."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["table", "row", "column", "text", "value", "link"])
    for table in report_tables(report):
        for row in table.rows:
            label = " / ".join(cell.text for cell in row[: 2 if table.key in ("tests", "references") or "_task_" in table.key else 1])
            for column, cell in zip(table.columns, row):
                value = cell.value
                if isinstance(value, list):
                    value = ";".join("" if v is None else str(v) for v in value)
                writer.writerow([table.key, label, column, cell.text, "" if value is None else value, cell.link or ""])
    return buffer.getvalue()
