from django.db import connection

from dialtom_site.commands import ReportCommand
from releases import services


class Command(ReportCommand):
    help = ("Make the release records of every item and context that has none or an outdated one, as a worker does "
            "after each import; a build then checks none until an item, a context or a domain changes "
            "(PostgreSQL: on SQLite the files are written by Python, from no record).")

    def run(self, **options):
        made = services.release_records_refresh()
        return {"made": made, "up_to_date": services.release_records_up_to_date()}

    def summary(self, report):
        if connection.vendor != "postgresql":
            yield "no records on this database: the release files are written by Python"
            return
        yield f"{report['made']} records made; " + (
            "every record up to date: a build checks none" if report["up_to_date"] else
            "something changed meanwhile: the next build checks them")
