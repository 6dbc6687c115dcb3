"""bench/scale.py's pure helpers (the benchmark itself runs outside the suite)."""
import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location("bench_scale", Path(__file__).resolve().parent.parent / "bench" / "scale.py")
scale = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scale)


def test_shape_is_twelve_items_a_context_in_batches_of_504():
    s = scale.shape("40k")
    assert s["items"] == s["contexts"] * 12 >= 40_000
    assert s["batches"] == -(-s["contexts"] // 42)
    assert s["judgments"] == 3 * s["items"]
    assert scale.shape("4m")["judgments"] == 12_000_024


def test_percentile_interpolates_between_ranks():
    assert scale.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert scale.percentile(list(range(101)), 95) == 95
    assert scale.percentile([7.0], 95) == 7.0


def test_seq_scans_report_only_large_tables():
    plan = """Hash Join
  ->  Seq Scan on annotation_item  (cost=0.00..4288.12 rows=40512 width=723)
  ->  Parallel Seq Scan on verification_judgment u0  (cost=0.00..1.0 rows=1)
  ->  Seq Scan on accounts_user  (cost=0.00..1.23 rows=23 width=52)
  ->  Index Scan using verification_claim_pkey on verification_claim"""
    large = {"annotation_item": 40_512, "verification_judgment": 120_000, "accounts_user": 23, "verification_claim": 120_000}
    assert scale.seq_scans(plan, large) == ["annotation_item", "verification_judgment"]
    idle = "  ->  Seq Scan on annotation_item annotation_item_3  (cost=0.00..4288.12 rows=40512 width=29) (never executed)"
    assert scale.seq_scans(idle, large) == ["annotation_item (never executed)"]
