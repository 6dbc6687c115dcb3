"""manage.py study_create NAME --platform prolific --batch B [--batch …] --quota N --completion-code C …"""
from dialtom_site.commands import ReportCommand
from studies.api import study_out
from studies.services import StudyError, study_create


class Command(ReportCommand):
    help = "Create a study (a recruitment channel on Prolific, MTurk or a plain link); prints its link"
    input_errors = (StudyError,)

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--platform", required=True, choices=["prolific", "mturk", "link"])
        parser.add_argument("--batch", action="append", default=[], help="a batch it serves (repeatable): verification")
        parser.add_argument("--reference-set", help="the reference set it serves: crowd writing")
        parser.add_argument("--quota", type=int, required=True, help="items (or contexts) per participant")
        parser.add_argument("--completion-code", required=True)
        parser.add_argument("--screen-out-code", default="")
        pay = parser.add_mutually_exclusive_group(required=True)
        pay.add_argument("--pay-per-item")
        pay.add_argument("--pay-per-hour")
        parser.add_argument("--currency", default="GBP")
        parser.add_argument("--minimum-hourly", help="the lowest effective hourly rate you accept (the study page warns below it)")
        parser.add_argument("--session-minutes", type=int, default=60)
        parser.add_argument("--item-seconds-cap", type=int, default=300, help="active time counted per item at most")
        parser.add_argument("--qualification-batch", help="a batch of gold items audited before real work")
        parser.add_argument("--pass-mark", type=float, default=0.8, help="share of qualification items right to pass")
        parser.add_argument("--gold-threshold", type=float, help="stop a participant whose gold accuracy falls below this")
        parser.add_argument("--gold-min-answers", type=int, default=3)
        super().add_arguments(parser)

    def run(self, **o) -> dict:
        study = study_create(
            name=o["name"], platform=o["platform"], batches=o["batch"], reference_set=o["reference_set"], quota=o["quota"],
            completion_code=o["completion_code"], screen_out_code=o["screen_out_code"], pay_per_item=o["pay_per_item"],
            pay_per_hour=o["pay_per_hour"], currency=o["currency"], minimum_hourly=o["minimum_hourly"],
            session_minutes=o["session_minutes"], item_seconds_cap=o["item_seconds_cap"],
            qualification_batch=o["qualification_batch"], qualification_pass_mark=o["pass_mark"],
            gold_threshold=o["gold_threshold"], gold_min_answers=o["gold_min_answers"],
        )
        out = study_out(study)
        return {"study": out["study"], "url": out["url"], "platform": out["platform"], "quota": out["quota"],
                "batches": out["batches"], "reference_set": out["reference_set"], "pay_basis": out["pay_basis"],
                "pay_rate": out["pay_rate"], "currency": out["currency"]}

    def summary(self, report):
        yield f"study {report['study']} ({report['platform']}): {report['pay_rate']} {report['currency']} per {report['pay_basis']}"
        yield f"link: {report['url']}"
