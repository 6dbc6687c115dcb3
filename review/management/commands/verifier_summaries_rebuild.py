from aggregation.worker_agreement import worker_agreement_rebuild
from dialtom_site.commands import ReportCommand
from verification.pair_tallies import pairs_rebuild


class Command(ReportCommand):
    help = ("Rebuild from scratch the summaries /review/verifiers/ reads: pairs, counts and seconds per verifier "
            "(verification/pair_tallies.py) and agreement with the consensus (aggregation/worker_agreement.py). "
            "Kept as the work happens: needed once after the migration, or after writing judgments by hand.")

    def run(self, **options) -> dict:
        return {"pairs": pairs_rebuild(), "consensus": worker_agreement_rebuild()}
