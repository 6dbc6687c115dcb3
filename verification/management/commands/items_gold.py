from verification.services import items_gold_set

from ._base import JsonCommand


class Command(JsonCommand):
    help = "Mark items as gold (attention checks; their answer key is the known answer), or --unmark them"

    def add_arguments(self, parser):
        parser.add_argument("item_ids", nargs="+")
        parser.add_argument("--unmark", action="store_true")
        super().add_arguments(parser)

    def run(self, **o):
        n = items_gold_set(item_ids=o["item_ids"], is_gold=not o["unmark"])
        return {"items": n, "is_gold": not o["unmark"]}

    def summary(self, report):
        yield f"{report['items']} item(s) {'' if report['is_gold'] else 'un'}marked gold"
