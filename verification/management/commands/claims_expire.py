from verification.services import claims_expire

from ._base import JsonCommand


class Command(JsonCommand):
    help = "Return claims whose lease ran out to their pools (the queue also does this as it goes)"

    def run(self, **o):
        n = claims_expire()
        return {"expired": n}

    def summary(self, report):
        yield f"{report['expired']} claim(s) expired"
