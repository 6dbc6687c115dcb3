"""Choose the reference subset: `reference_subset --size 300 --per-context 3 --seed 7 [--ids FILE] [--json]`."""
from pathlib import Path

from django.core.management.base import CommandError
from django.db.models import Count

from references import services
from annotation.models import Speaker
from dialtom_site.commands import ReportCommand


class Command(ReportCommand):
    help = "Create a reference set: N contexts stratified by domain (seeded), or the context ids listed in a file."

    def add_arguments(self, parser):
        parser.add_argument("--name", default="references", help="name of the set (default: references)")
        parser.add_argument("--size", type=int, default=300, help="number of contexts to sample (default 300)")
        parser.add_argument("--per-context", type=int, default=3, help="writers per (context, attribute), k (default 3)")
        parser.add_argument("--attributes", default="", help="comma-separated attributes asked of each context (default all six)")
        parser.add_argument("--attributes-per-worker", type=int, default=6,
                            help="how many of a context's attributes one claim gives a worker (1-6, default 6)")
        parser.add_argument("--seed", type=int, default=7, help="seed of the stratified sample (default 7)")
        parser.add_argument("--ids", type=Path, help="a file of context ids, one a line, instead of sampling")
        parser.add_argument("--target-speaker", choices=Speaker.values, default=Speaker.RECIPIENT)
        parser.add_argument("--min-chars", type=int, default=20, help="minimum characters per inference")
        parser.add_argument("--lease-minutes", type=int, default=30)
        super().add_arguments(parser)

    def run(self, **opts):
        ids = None
        if opts["ids"] is not None:
            path: Path = opts["ids"]
            if not path.is_file():
                raise CommandError(f"{path}:0: ids: no such file")
            with path.open("rb") as fh:
                try:
                    ids = services.context_ids_parse(lines=fh.read().splitlines(), filename=str(path))
                except services.InputFormatError as exc:
                    raise CommandError(str(exc)) from exc
        try:
            reference_set = services.reference_set_create(
                name=opts["name"],
                size=opts["size"],
                per_context=opts["per_context"],
                seed=opts["seed"],
                context_ids=ids,
                target_speaker=opts["target_speaker"],
                min_chars=opts["min_chars"],
                lease_minutes=opts["lease_minutes"],
                attributes=services.attributes_clean(opts["attributes"]),
                attributes_per_worker=opts["attributes_per_worker"],
            )
        except services.ReferenceWorkflowError as exc:
            raise CommandError(str(exc)) from exc
        by_domain = dict(
            reference_set.members.values("context__domain_id").annotate(n=Count("id")).values_list("context__domain_id", "n")
        )
        return {
            "reference_set": reference_set.name,
            "source": reference_set.source,
            "seed": reference_set.seed,
            "contexts": sum(by_domain.values()),
            "attributes": services.attributes_clean(opts["attributes"]),
            "per_context": reference_set.per_context,
            "attributes_per_worker": reference_set.attributes_per_worker,
            "units": sum(by_domain.values()) * len(services.attributes_clean(opts["attributes"])),
            "references_needed": sum(by_domain.values()) * len(services.attributes_clean(opts["attributes"])) * reference_set.per_context,
            "by_domain": dict(sorted(by_domain.items())),
        }

    def summary(self, report):
        yield (
            f"Created {report['reference_set']}: {report['contexts']} contexts "
            f"({', '.join(f'{d} {n}' for d, n in report['by_domain'].items())}); {report['units']} (context, attribute) units "
            f"of {', '.join(report['attributes'])}, {report['per_context']} writers each, up to "
            f"{report['attributes_per_worker']} attribute(s) per claim."
        )
