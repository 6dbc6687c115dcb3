"""The study report against an independent recomputation: crowd-kit per batch, Gwet's formula
(and irrCAC), SciPy, sacrebleu and rouge-score; its formats, its doors and its release files.

One study (conftest.build_study) is built for the whole module inside a transaction that is
rolled back at the end; each test runs in a savepoint of it.
"""
import csv
import io
import json
import math
import shutil
import subprocess
from pathlib import Path
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene
from django.conf import settings
from django.db import transaction
from django.test import override_settings
from irrCAC.raw import CAC
from scipy import stats as sps

from tests.factories import StaffFactory, UserFactory, api_for

from .conftest import build_study

TEX_ENGINES = ("pdflatex", "lualatex", "xelatex")


@pytest.fixture(scope="module")
def study(django_db_setup, django_db_blocker, tmp_path_factory, study_dir):
    root = tmp_path_factory.mktemp("report-releases")
    with django_db_blocker.unblock(), override_settings(RELEASE_ROOT=root / "releases"):
        with transaction.atomic():
            built = build_study(root, study_dir)
            yield built
            transaction.set_rollback(True)


@pytest.fixture(scope="module")
def report(study, django_db_blocker):
    from report.selectors import study_report

    with django_db_blocker.unblock():
        return study_report(release=study.release)


@pytest.fixture
def in_study(study, db):
    return study


@pytest.fixture(autouse=True)
def _the_studys_release_root(settings, study):
    """The study's release was built under the module's own root: its files are read from there."""
    settings.RELEASE_ROOT = Path(study.release.files["report.json"]["path"]).parent.parent


# --- an independent recomputation ---------------------------------------------------------------


def _judgments(batch_ids) -> pd.DataFrame:
    """Every usable judgment on a benchmark item, read straight from the tables."""
    from verification.models import Judgment

    rows = Judgment.objects.filter(
        item__batch_id__in=batch_ids, verifier__excluded_from_aggregation=False, exposed=False, item__is_gold=False,
    ).values_list("item_id", "verifier_id", "label", "item__batch_id", "item__task", "item__context__domain_id",
                  "item__attribute", "item__variant", "item__answer")
    return pd.DataFrame.from_records(
        list(rows), columns=["task", "worker", "label", "batch", "kind", "domain", "attribute", "variant", "answer"]
    )


def _gwet(groups: dict, categories: list[str]) -> float:
    """Gwet's AC1 (2008) from {item: [labels]}, straight from the formula."""
    q = len(categories)
    rated = {item: [label for label in labels if label in categories] for item, labels in groups.items()}
    rated = {item: labels for item, labels in rated.items() if labels}
    pa_terms = []
    for labels in rated.values():
        r = len(labels)
        if r >= 2:
            pa_terms.append(sum(labels.count(c) * (labels.count(c) - 1) for c in categories) / (r * (r - 1)))
    pa = sum(pa_terms) / len(pa_terms)
    pi = {c: sum(labels.count(c) / len(labels) for labels in rated.values()) / len(rated) for c in categories}
    pe = sum(p * (1 - p) for p in pi.values()) / (q - 1)
    return (pa - pe) / (1 - pe)


def _categories(frame: pd.DataFrame) -> list[str]:
    nota = (frame["kind"] == "prospective").any() or (frame["variant"] == "counterfactual").any()
    return ["A", "B", "C", "D", *(["NOTA"] if nota else []), "NONE", "MULTIPLE"]


KEYS = {"by_task": ["kind"], "by_task_domain": ["kind", "domain"], "by_attribute": ["attribute"],
        "by_task_attribute": ["kind", "attribute"]}
REPORT_KEYS = {"kind": "task", "domain": "domain", "attribute": "attribute"}


def _row(report, grouping, key):
    names = [REPORT_KEYS[k] for k in KEYS[grouping]]
    return next(r for r in report["verification"][grouping] if tuple(r[n] for n in names) == key)


def test_retention_equals_dawid_skene_fitted_per_batch_with_crowd_kit(in_study, report):
    frame = _judgments(list(in_study.batches.values()))
    kept = []
    for _, batch in frame.groupby("batch"):
        rows = batch[["task", "worker", "label"]].sort_values(["task", "worker"]).reset_index(drop=True)
        ds = DawidSkene(n_iter=settings.DIALTOM_DS_N_ITER, tol=settings.DIALTOM_DS_TOL)
        posterior = ds.fit_predict_proba(rows).max(axis=1)
        items = batch.drop_duplicates("task").set_index("task")
        items["retained"] = (ds.labels_.reindex(items.index) == items["answer"]) & (
            posterior.reindex(items.index) >= settings.DIALTOM_RETENTION_THRESHOLD)
        kept.append(items)
    items = pd.concat(kept)
    for grouping, keys in KEYS.items():
        expected = items.groupby(keys)["retained"].agg(["size", "sum"])
        assert len(report["verification"][grouping]) == len(expected)
        for key, (size, total) in expected.iterrows():
            row = _row(report, grouping, key if isinstance(key, tuple) else (key,))
            assert (row["items"], row["retained"]) == (size, total)
            assert row["retention"] == pytest.approx(total / size)


def test_ac1_pooled_and_per_batch_equal_gwets_formula(in_study, report):
    frame = _judgments(list(in_study.batches.values()))
    names = {pk: name for name, pk in in_study.batches.items()}
    for grouping, keys in KEYS.items():
        for key, group in frame.groupby(keys):
            key = key if isinstance(key, tuple) else (key,)
            row = _row(report, grouping, key)
            categories = _categories(group)
            assert row["categories"] == categories
            pooled = _gwet(group.groupby("task")["label"].apply(list).to_dict(), categories)
            assert row["ac1"] == pytest.approx(pooled, abs=1e-12)
            per_batch = {
                names[b]: _gwet(part.groupby("task")["label"].apply(list).to_dict(), _categories(part))
                for b, part in group.groupby("batch")
            }
            low, high = min(per_batch, key=per_batch.get), max(per_batch, key=per_batch.get)
            assert row["ac1_batches"]["n"] == len(per_batch)
            assert row["ac1_batches"]["min"] == pytest.approx(per_batch[low], abs=1e-12)
            assert row["ac1_batches"]["max"] == pytest.approx(per_batch[high], abs=1e-12)
            assert row["ac1_batches"]["min_batch"] == low and row["ac1_batches"]["max_batch"] == high


def test_ac1_confidence_intervals_equal_irrcac(in_study, report):
    frame = _judgments(list(in_study.batches.values()))
    for kind, group in frame.groupby("kind"):
        wide = group.pivot(index="task", columns="worker", values="label")
        ref = CAC(wide, categories=_categories(group)).gwet()["est"]
        row = _row(report, "by_task", (kind,))
        assert row["ac1"] == pytest.approx(ref["coefficient_value"], abs=6e-6)
        assert row["ac1_se"] == pytest.approx(ref["se"], abs=6e-6)
        assert row["ac1_ci"][0] == pytest.approx(ref["confidence_interval"][0], abs=6e-6)
        assert row["ac1_ci"][1] == pytest.approx(min(1.0, ref["confidence_interval"][1]), abs=6e-6)


def test_task_domain_agrees_with_what_aggregation_stored(in_study, report):
    from aggregation.models import BatchResult
    from aggregation.selectors import agreement_by_task_domain

    pooled = {(r["task"], r["domain"]): r for r in agreement_by_task_domain(batch_ids=list(in_study.batches.values()))}
    stored = defaultdict(dict)
    for result in BatchResult.objects.select_related("batch"):
        for key, group in result.by_group.items():
            stored[tuple(key.split(":"))][result.batch.name] = group["ac1"]
    for row in report["verification"]["by_task_domain"]:
        key = (row["task"], row["domain"])
        assert row["ac1"] == pytest.approx(pooled[key]["ac1"]) and row["ac1_ci"] == pytest.approx(pooled[key]["ac1_ci"])
        assert row["ac1_batches"]["min"] == pytest.approx(min(stored[key].values()))
        assert row["ac1_batches"]["max"] == pytest.approx(max(stored[key].values()))
    batches = {b["batch"]: b for b in report["verification"]["batches"]}
    for result in BatchResult.objects.select_related("batch"):
        assert batches[result.batch.name]["ac1"] == pytest.approx(result.ac1)
        assert batches[result.batch.name]["retained"] == result.retained


# --- evaluation ---------------------------------------------------------------------------------


def _outcomes(run) -> pd.DataFrame:
    """A run's predictions against the release's labels, straight from the tables."""
    from releases.models import ReleaseItem

    labels = {e.item_id: (e.label, e.retained) for e in ReleaseItem.objects.filter(release=run.release)}
    rows = []
    for p in run.predictions.select_related("item__context"):
        label, retained = labels[p.item_id]
        if retained:
            rows.append({"item": p.item_id, "parent": p.item.parent_id, "task": p.item.task,
                         "domain": p.item.context.domain_id, "attribute": p.item.attribute,
                         "variant": p.item.variant, "correct": int(p.prediction == label)})
    return pd.DataFrame(rows)


def test_accuracy_and_wilson_intervals_equal_scipy(in_study, report):
    runs = {r["name"]: r for r in report["evaluation"]["runs"]}
    assert sorted(runs) == sorted(in_study.runs)
    for name, run in in_study.runs.items():
        outcomes = _outcomes(run)
        for dimension in ("task", "domain", "attribute", "variant"):
            for value, group in outcomes.groupby(dimension):
                cell = runs[name]["accuracy"][dimension][value]
                k, n = int(group["correct"].sum()), len(group)
                assert (cell["correct"], cell["n"]) == (k, n)
                ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
                assert cell["ci"] == pytest.approx([ci.low, ci.high], abs=1e-12)
    baseline = report["evaluation"]["baselines"][0]
    overall = baseline["accuracy"]["overall"]
    ci = sps.binomtest(overall["correct"], overall["n"]).proportion_ci(method="wilson")
    assert overall["ci"] == pytest.approx([ci.low, ci.high]) and overall["n"] == in_study.baseline.scores["overall"]["n"]


def test_the_papers_tests_equal_scipy(in_study, report):
    runs = {r["name"]: r for r in report["evaluation"]["runs"]}
    for name, run in in_study.runs.items():
        outcomes, tests = _outcomes(run), runs[name]["tests"]
        # χ² between domains with Cramér's V (all items; hard items per task)
        for scope, part in [("all", outcomes), *((t, outcomes[(outcomes.task == t) & (outcomes.variant == "hard")])
                                                 for t in ("retrospective", "prospective"))]:
            table = pd.crosstab(part["domain"], part["correct"]).reindex(columns=[1, 0], fill_value=0).to_numpy()
            chi2, p, dof, _ = sps.chi2_contingency(table, correction=False)
            result = tests["domain_gap"][scope]
            assert (result["chi2"], result["p_value"], result["dof"], result["n"]) == pytest.approx((chi2, p, dof, len(part)))
            assert result["cramers_v"] == pytest.approx(math.sqrt(chi2 / (len(part) * (min(table.shape) - 1))))
            v = sps.contingency.association(table, method="cramer")
            assert result["cramers_v"] == pytest.approx(v)
        # Mann–Whitney U, Easy vs Hard prospective items
        easy = outcomes[(outcomes.task == "prospective") & (outcomes.variant == "easy")]["correct"]
        hard = outcomes[(outcomes.task == "prospective") & (outcomes.variant == "hard")]["correct"]
        mw = sps.mannwhitneyu(easy, hard, alternative="two-sided")
        assert (tests["easy_vs_hard"]["u"], tests["easy_vs_hard"]["p_value"]) == pytest.approx((mw.statistic, mw.pvalue))
        assert tests["easy_vs_hard"]["n_easy"] + tests["easy_vs_hard"]["n_hard"] == len(easy) + len(hard)
        # McNemar: the same items with the true (parent) and the counterfactual profile
        by_item = outcomes.set_index("item")["correct"]
        cf = outcomes[outcomes.variant == "counterfactual"]
        pairs = [(by_item[parent], c) for parent, c in zip(cf["parent"], cf["correct"]) if parent in by_item.index]
        b = sum(1 for t, c in pairs if t and not c)
        c_ = sum(1 for t, c in pairs if c and not t)
        result = tests["counterfactual"]
        assert result["n"] == len(pairs) and result["table"][0][1] == b and result["table"][1][0] == c_
        if b + c_ < 25:
            expected = sps.binomtest(min(b, c_), b + c_, 0.5).pvalue if b + c_ else 1.0
        else:
            expected = sps.chi2.sf((abs(b - c_) - 1) ** 2 / (b + c_), 1)
        assert result["p_value"] == pytest.approx(expected)
    # Pearson and Spearman between domains of per-model accuracy
    rates = {name: _outcomes(run).groupby("domain")["correct"].mean() for name, run in in_study.runs.items()}
    for row in report["evaluation"]["correlations"]:
        x = [rates[n][row["a"]] for n in sorted(rates)]
        y = [rates[n][row["b"]] for n in sorted(rates)]
        pearson, spearman = sps.pearsonr(x, y), sps.spearmanr(x, y)
        assert row["n"] == len(x) == 4
        assert (row["pearson_r"], row["pearson_p"]) == pytest.approx((pearson.statistic, pearson.pvalue))
        assert (row["spearman_rho"], row["spearman_p"]) == pytest.approx((spearman.statistic, spearman.pvalue))


def test_references_equal_sacrebleu_and_rouge_score(in_study, report):
    import sacrebleu
    from rouge_score import rouge_scorer

    from references.selectors import accepted_references_by_context

    refs = accepted_references_by_context(reference_set_id=in_study.similarity.reference_set_id)
    rows = {r["attribute"]: r for r in report["references"]["runs"][0]["by_attribute"]}
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    for attribute in ("belief", "desire", "emotion"):
        pairs = [(i["text"], refs[(i["context_id"], i["attribute"])]) for i in in_study.inferences if i["attribute"] == attribute]
        bleu = sacrebleu.corpus_bleu([h for h, _ in pairs], [list(s) for s in zip(*[r for _, r in pairs])]).score
        rouge = np.mean([max(scorer.score(r, h)["rougeL"].fmeasure for r in rs) for h, rs in pairs])
        assert rows[attribute]["bleu"] == pytest.approx(bleu, abs=1e-4)
        assert rows[attribute]["rouge_l"] == pytest.approx(rouge, abs=1e-6)
        assert rows[attribute]["bertscore"] is None
    assert "DIALTOM_BERTSCORE_MODEL_DIR" in report["references"]["bertscore"]["reason"]


# --- doors and files --------------------------------------------------------------------------


def test_every_number_links_to_its_page(in_study, report):
    from report.tables import report_tables

    tables = {t.key: t for t in report_tables(report)}
    for row in tables["verification_task_domain"].rows:
        assert row[2].link.startswith("/api/v1/releases/v1/items?format=csv&task=")
        assert row[6].link.startswith("/review/items/?batch=batch-")
    for row in tables["tests"].rows:
        expected = "/leaderboard/#baselines" if row[0].text.startswith("human-") else f"/leaderboard/{row[0].text}/"
        assert row[0].link == row[2].link == expected
    assert tables["references"].rows[0][2].link == f"/annotate/similarity/{in_study.similarity.pk}/"
    assert report["verification"]["batches"][0]["links"]["run"].startswith("/api/v1/aggregation-runs/")


def test_the_release_freezes_the_report(in_study):
    from releases.export import sha256_file
    from report.selectors import study_report

    files = in_study.release.manifest["files"]
    assert {"report.json", "report.tex"} <= set(files)
    folder = Path(in_study.release.files["report.tex"]["path"]).parent
    assert files["report.tex"]["sha256"] == sha256_file(folder / "report.tex")
    frozen = json.loads((folder / "report.json").read_text())
    assert frozen["release"] == "v1" and frozen["evaluation"]["runs"] == []  # built before any run was scored on it
    assert "no model run" in frozen["evaluation"]["note"]
    assert frozen["verification"] == json.loads(json.dumps(_counted_again(in_study.release)))
    assert (folder / "report.tex").read_text().startswith(r"\documentclass")
    assert study_report(release=in_study.release)["verification"] == frozen["verification"]


def _counted_again(release):
    from report.selectors import release_pairs, verification_section

    return verification_section(pairs=release_pairs(release=release), release=release)


def _statements(call):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        result = call()
    return result, " ".join(q["sql"] for q in queries.captured_queries)


def test_a_release_s_report_reads_the_verification_it_froze_not_the_results_again(in_study, client):
    """A ready release's page, API and report read its verification from report.json (flat at any
    size): no agreement pattern, result or judgment is read; the numbers are those counted again."""
    from report.selectors import study_report

    report, sql = _statements(lambda: study_report(release=in_study.release))
    assert report["verification"] == json.loads(json.dumps(_counted_again(in_study.release)))
    for table in ("aggregation_agreementpattern", "aggregation_itemresult", "verification_judgment"):
        assert table not in sql, table
    staff = StaffFactory(username="report-frozen")
    client.force_login(staff)
    page, sql = _statements(lambda: client.get("/report/?release=v1"))
    assert page.status_code == 200 and "aggregation_agreementpattern" not in sql
    body, sql = _statements(lambda: api_for(staff).get("/api/v1/study-report/?release=v1").json())
    assert body["verification"] == report["verification"] and "aggregation_agreementpattern" not in sql


def test_a_release_without_a_frozen_report_is_counted_from_its_results(in_study):
    """A release built before the report was frozen into releases (or whose report.json is of
    another format or release) is counted from its frozen results, as before."""
    from releases.models import Release
    from report.selectors import _frozen_report, study_report

    release = Release.objects.get(pk=in_study.release.pk)
    release.summary = {**release.summary, "files": {k: v for k, v in release.summary["files"].items() if k != "report.json"}}
    release.save(update_fields=["summary"])
    report, sql = _statements(lambda: study_report(release=release))
    assert "aggregation_agreementpattern" in sql
    assert report["verification"] == _counted_again(release)
    folder = Path(in_study.release.files["report.json"]["path"]).parent
    release = Release.objects.get(pk=in_study.release.pk)
    kept = (folder / "report.json").read_text()
    try:
        (folder / "report.json").write_text(json.dumps({**json.loads(kept), "format": 0}))
        _frozen_report.cache_clear()  # a process reads a release's report once: its files never change
        report, sql = _statements(lambda: study_report(release=release))
        assert "aggregation_agreementpattern" in sql
    finally:
        (folder / "report.json").write_text(kept)
        _frozen_report.cache_clear()


def _tex_engine():
    return next((shutil.which(e) for e in TEX_ENGINES if shutil.which(e)), None)


@pytest.mark.skipif(_tex_engine() is None, reason="no TeX engine (pdflatex, lualatex, xelatex) is installed: "
                    "apt-get install texlive-latex-base texlive-latex-recommended to compile the report")
def test_the_latex_compiles_as_it_is(in_study, report, tmp_path):
    from report.tables import render_latex

    source = render_latex(report)
    assert r"\usepackage{booktabs}" in source and r"\toprule" in source and r"\midrule" in source
    (tmp_path / "report.tex").write_text(source)
    done = subprocess.run([_tex_engine(), "-interaction=nonstopmode", "-halt-on-error", "report.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "report.pdf").stat().st_size > 1000
    frozen = Path(in_study.release.files["report.tex"]["path"]).read_text()  # the release's copy, with no run yet
    (tmp_path / "frozen.tex").write_text(frozen)
    done = subprocess.run([_tex_engine(), "-interaction=nonstopmode", "-halt-on-error", "frozen.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]


def test_api_formats_and_who_may_read(in_study):
    from accounts.models import Role

    staff, reader = StaffFactory(username="report-staff"), UserFactory(username="report-reader", role=Role.RELEASE_READER)
    verifier = UserFactory(username="report-verifier")
    assert api_for(verifier).get("/api/v1/study-report/").status_code == 403
    body = api_for(reader).get("/api/v1/study-report/?release=v1").json()
    assert body["release"] == "v1" and len(body["evaluation"]["runs"]) == 4
    current = api_for(staff).get("/api/v1/study-report/").json()
    assert current["results"] == "current results" and current["evaluation"]["release"] == "v1"
    latex = api_for(staff).get("/api/v1/study-report/?release=v1&format=latex")
    assert latex.status_code == 200 and latex["Content-Type"].startswith("application/x-latex")
    assert latex.content.decode().startswith(r"\documentclass") and "study-report-v1.tex" in latex["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(api_for(staff).get("/api/v1/study-report/?format=csv").content.decode())))
    assert {"table", "row", "column", "text", "value", "link"} == set(rows[0])
    assert any(r["table"] == "tests" and r["column"] == "p" for r in rows)
    md = api_for(staff).get("/api/v1/study-report/?format=md").content.decode()
    assert md.startswith("# DialToM study report") and "| Task | Domain |" in md
    assert api_for(staff).get("/api/v1/study-report/?release=nope").status_code == 404


def test_page_for_staff(in_study, client):
    staff, verifier = StaffFactory(username="report-staff2"), UserFactory(username="report-verifier2")
    client.force_login(verifier)
    assert client.get("/report/").status_code == 403
    client.force_login(staff)
    page = client.get("/report/?release=v1")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Verification per task and domain" in html and 'href="/leaderboard/model-a/"' in html
    assert 'href="/api/v1/releases/v1/items?format=csv&amp;task=prospective&amp;domain=esc"' in html


def test_report_queries_do_not_grow_with_items(in_study, django_assert_max_num_queries):
    from report.selectors import study_report

    with django_assert_max_num_queries(40):  # a few a run (outcomes, pairs), none an item or a batch
        study_report(release=in_study.release)


def _judgment_counts(batch_ids):
    """Per (item, label): the item's cell and its judgments, read one judgment at a time (not as the report does)."""
    from collections import Counter

    from aggregation.selectors import usable_judgments

    rows = usable_judgments().filter(item__batch_id__in=batch_ids, item__is_gold=False).values_list(
        "item_id", "label", "item__batch_id", "item__task", "item__context__domain_id", "item__attribute", "item__variant")
    return Counter(rows)


def test_the_reports_agreement_summed_in_sql_is_the_agreement_of_each_groups_matrix(in_study):
    """report.selectors.verification_section (per-cell sums in SQL, aggregation.agreement.summary_from_sums)
    against agreement_summary / gwet_ac1 on each group's and each (group, batch) part's counts matrix."""
    from collections import defaultdict

    from aggregation.agreement import agreement_summary, counts_from_long, gwet_ac1
    from aggregation.selectors import categories_for
    from annotation.models import Batch
    from report.selectors import GROUPINGS, release_pairs, verification_section

    batch_ids = list(in_study.batches.values())
    counts = _judgment_counts(batch_ids)
    names = dict(Batch.objects.filter(pk__in=batch_ids).values_list("id", "name"))
    section = verification_section(pairs=release_pairs(release=in_study.release), release=None)
    position = {"batch": 2, "task": 3, "domain": 4, "attribute": 5, "variant": 6}

    def matrix(entries):
        categories = categories_for(kinds={(e[3], e[6]) for e in entries})
        subjects, labels = [], []
        for entry in entries:
            subjects += [entry[0]] * counts[entry]
            labels += [entry[1]] * counts[entry]
        return counts_from_long(subjects, labels, categories=categories)[1], categories

    assert section["judgments"] == sum(counts.values())
    for grouping, keys in GROUPINGS.items():
        groups = defaultdict(list)
        for entry in counts:
            groups[tuple(entry[position[k]] for k in keys)].append(entry)
        rows = {tuple(row[k] for k in keys): row for row in section[grouping]}
        assert set(groups) <= set(rows)
        for key, entries in groups.items():
            row = rows[key]
            m, categories = matrix(entries)
            expected = agreement_summary(m)
            assert row["categories"] == categories and row["judgments"] == sum(counts[e] for e in entries)
            for name in ("ac1", "ac1_se", "kappa", "alpha"):
                assert row[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-12), (grouping, key, name)
            assert row["ac1_ci"] == pytest.approx(expected["ac1_ci"], rel=1e-9, abs=1e-12)
            by_batch = defaultdict(list)
            for entry in entries:
                by_batch[entry[2]].append(entry)
            values = {names[b]: gwet_ac1(matrix(part)[0]).value for b, part in by_batch.items()}
            defined = {b: v for b, v in values.items() if v is not None}
            if defined:
                assert row["ac1_batches"]["min"] == pytest.approx(min(defined.values()), abs=1e-12)
                assert row["ac1_batches"]["max"] == pytest.approx(max(defined.values()), abs=1e-12)
            assert row["ac1_batches"]["n"] == len(defined)

