"""Adaptive overlap (issue 13): judgments spent vs accuracy of the retention decision.

    .venv/bin/python bench/overlap.py [--seeds 11,12,13,14,15] [--contexts 300] [--out bench/results]

For each seed: makes a synthetic set with `../shared/tools/make_synthetic.py --overlap 5`
(22 verifiers of known, task-dependent accuracy; truth.csv says which items an ideal
aggregation keeps), replays it with `manage.py overlap_simulate --naive --fixed 2,3,4`
(the same policy code as the live queue; no database), and writes
`results/overlap.md` (a table per seed and the mean) and `results/overlap.svg` (judgments
spent, as a share of fixed k=5, against accuracy, for adaptive, naive and fixed k).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAKE = ROOT.parent / "shared" / "tools" / "make_synthetic.py"  # ../shared, beside the repository


def run_seed(seed: int, contexts: int, tmp: Path) -> dict:
    out = tmp / f"seed{seed}"
    tool = Path(os.environ.get("DIALTOM_SYNTHETIC", MAKE))
    subprocess.run([sys.executable, str(tool), str(out), "--overlap", "5", "--seed", str(seed), "--contexts", str(contexts)],
                   check=True, capture_output=True)
    cmd = [sys.executable, "manage.py", "overlap_simulate", "--items", str(out / "items.jsonl"),
           "--judgments", str(out / "judgments.csv"), "--truth", str(out / "truth.csv"),
           "--k-min", "2", "--k-max", "5", "--fixed", "2,3,4", "--naive", "--json"]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "dialtom_site.settings.test")}
    done = subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def points(r: dict) -> dict:
    k5 = r["fixed_judgments"]["5"]
    pts = {f"fixed k={k}": (n / k5, r["fixed_accuracy"][k]) for k, n in sorted(r["fixed_judgments"].items())}
    pts["naive (2 agree / 3 equal / 5)"] = (r["naive_judgments"] / k5, r["naive_accuracy"])
    pts["adaptive k=2..5"] = (r["adaptive_judgments"] / k5, r["adaptive_accuracy"])
    return pts


def svg(mean: dict, per_seed: list[dict]) -> str:
    w, h, left, bottom, top, right = 640, 420, 70, 50, 20, 20
    ys = [y for p in per_seed for _, y in p.values()]
    x0, x1 = 0.3, 1.05
    y0, y1 = min(ys) - 0.005, max(ys) + 0.005

    def px(x):
        return left + (x - x0) / (x1 - x0) * (w - left - right)

    def py(y):
        return h - bottom - (y - y0) / (y1 - y0) * (h - bottom - top)

    colours = {"adaptive": "#c0392b", "naive": "#2471a3", "fixed": "#555555"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>']
    for i in range(8):
        x = x0 + i * 0.1
        if x > x1:
            break
        parts.append(f'<line x1="{px(x):.1f}" y1="{h - bottom}" x2="{px(x):.1f}" y2="{h - bottom + 5}" stroke="black"/>'
                     f'<text x="{px(x):.1f}" y="{h - bottom + 18}" text-anchor="middle">{x:.1f}</text>')
    steps = 6
    for i in range(steps + 1):
        y = y0 + i * (y1 - y0) / steps
        parts.append(f'<line x1="{left - 5}" y1="{py(y):.1f}" x2="{left}" y2="{py(y):.1f}" stroke="black"/>'
                     f'<text x="{left - 8}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.3f}</text>')
    parts.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">judgments spent (share of fixed k=5)</text>')
    parts.append(f'<text transform="translate(16,{(top + h - bottom) / 2}) rotate(-90)" text-anchor="middle">'
                 'accuracy of the retention decision</text>')
    fixed = sorted((v for k, v in mean.items() if k.startswith("fixed")), key=lambda p: p[0])
    parts.append('<polyline fill="none" stroke="#999" stroke-dasharray="4 3" points="'
                 + " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in fixed) + '"/>')
    for p in per_seed:
        for name, (x, y) in p.items():
            c = colours[name.split()[0]]
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{c}" fill-opacity="0.35"/>')
    for name, (x, y) in mean.items():
        c = colours[name.split()[0]]
        dy = 18 if name.startswith("naive") else 4  # below adaptive's label, which sits close by
        parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="6" fill="{c}"/>'
                     f'<text x="{px(x) + 9:.1f}" y="{py(y) + dy:.1f}" fill="{c}">{name}</text>')
    parts.append(f'<text x="{w - right}" y="{top + 10}" text-anchor="end" fill="#555">large: mean of seeds; small: each seed</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default="11,12,13,14,15")
    p.add_argument("--contexts", type=int, default=300)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    a = p.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    reports = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            reports[seed] = run_seed(seed, a.contexts, Path(tmp))
            print(f"seed {seed}: {json.dumps(points(reports[seed]))}", flush=True)
    per_seed = [points(r) for r in reports.values()]
    names = list(per_seed[0])
    mean = {n: (sum(p[n][0] for p in per_seed) / len(per_seed), sum(p[n][1] for p in per_seed) / len(per_seed)) for n in names}
    r0 = next(iter(reports.values()))
    lines = [
        "# Adaptive overlap (issue 13): judgments spent vs accuracy",
        "",
        f"Rerun: `.venv/bin/python bench/overlap.py --seeds {a.seeds} --contexts {a.contexts}` "
        "(no database; about a minute a seed on 2 shared cores).",
        "",
        f"Sets: `make_synthetic.py --overlap 5 --contexts {a.contexts} --seed S` ({r0['items']} items in "
        f"{r0['batches']} batches, 22 verifiers). Accuracy: share of items whose retention decision "
        "(crowd-kit Dawid–Skene per batch on the judgments used) equals truth.csv's `keep`. Judgments: share of fixed k=5's.",
        f"Policy: `{json.dumps({k: v for k, v in r0['policy'].items() if k != 'method'})}`",
        "",
        "| seed | adaptive judgments | adaptive accuracy | agreement with k=5 | naive judgments | naive accuracy "
        "| k=3 judgments | k=3 accuracy | k=4 accuracy | k=5 accuracy |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for seed, r in reports.items():
        k5 = r["fixed_judgments"]["5"]
        lines.append(
            f"| {seed} | {r['adaptive_judgments'] / k5:.3f} | {r['adaptive_accuracy']:.4f} | {r['adaptive_agreement_with_kmax']:.4f} "
            f"| {r['naive_judgments'] / k5:.3f} | {r['naive_accuracy']:.4f} | {r['fixed_judgments']['3'] / k5:.3f} "
            f"| {r['fixed_accuracy']['3']:.4f} | {r['fixed_accuracy']['4']:.4f} | {r['fixed_accuracy']['5']:.4f} |"
        )
    lines.append(
        f"| **mean** | **{mean['adaptive k=2..5'][0]:.3f}** | **{mean['adaptive k=2..5'][1]:.4f}** | "
        f"{sum(r['adaptive_agreement_with_kmax'] for r in reports.values()) / len(reports):.4f} "
        f"| {mean['naive (2 agree / 3 equal / 5)'][0]:.3f} | {mean['naive (2 agree / 3 equal / 5)'][1]:.4f} "
        f"| {mean['fixed k=3'][0]:.3f} | {mean['fixed k=3'][1]:.4f} | {mean['fixed k=4'][1]:.4f} | {mean['fixed k=5'][1]:.4f} |"
    )
    lines += ["", "![judgments spent vs accuracy](overlap.svg)", ""]
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "overlap.md").write_text("\n".join(lines))
    (a.out / "overlap.svg").write_text(svg(mean, per_seed))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
