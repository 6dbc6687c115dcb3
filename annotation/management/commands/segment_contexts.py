from annotation.services import contexts_segment

from ._base import ReportCommand, domain_lines


class Command(ReportCommand):
    help = ("Cut every ingested session without windows into contexts: close a window once it holds "
            "--min-words words, never split a turn, join a short tail to the window before.")

    def add_arguments(self, parser):
        parser.add_argument("--min-words", type=int, help="default settings.DIALTOM_SEGMENT_MIN_WORDS")
        parser.add_argument("--max-words", type=int, help="default settings.DIALTOM_SEGMENT_MAX_WORDS")
        parser.add_argument("--domain", choices=["mi", "esc", "pfg"], help="only this domain")
        super().add_arguments(parser)

    def run(self, *, min_words, max_words, domain, **options):
        return contexts_segment(min_words=min_words, max_words=max_words, domain=domain)

    def summary(self, report):
        yield (f"{report['created']['contexts']} contexts created from {report['created']['sessions']} sessions "
               f"({report['skipped']['sessions']} already segmented), window {report['min_words']}-"
               f"{report['max_words']} words")
        yield from domain_lines(report["domains"], ("sessions", "contexts", "mean_words_per_session",
                                                    "mean_words_per_context", "over_max"))
