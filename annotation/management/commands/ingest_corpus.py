from annotation.parsers import CORPUS_PARSERS
from annotation.services import corpus_ingest

from ._base import ReportCommand, domain_lines


class Command(ReportCommand):
    help = ("Ingest a corpus in its published format: annomi (AnnoMI full or simple CSV), esconv (ESConv.json), "
            "pfg (PersuasionForGood full_dialog.csv). Re-running on the same file changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("corpus", choices=sorted(CORPUS_PARSERS))
        parser.add_argument("path")
        parser.add_argument("--encoding", default="utf-8", help="the file's text encoding (default utf-8)")
        super().add_arguments(parser)

    def run(self, *, corpus, path, encoding, **options):
        return corpus_ingest(corpus=corpus, path=path, encoding=encoding)

    def summary(self, report):
        yield (f"{report['corpus']}: {report['created']['sessions']} sessions and {report['created']['turns']} turns "
               f"created, {report['skipped']['sessions']} sessions already there")
        yield from domain_lines(report["domains"], ("sessions", "turns", "mean_words_per_session"))
