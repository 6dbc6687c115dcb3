"""Queue fixtures for the verification tests: a batch opened to a pool of verifiers."""
from accounts.models import Pool
from annotation.models import Batch
from tests.factories import BatchFactory, ContextFactory, ItemFactory, ProspectiveItemFactory, UserFactory
from annotation.services import domains_ensure as ensure_domains  # noqa: F401,E402 (re-exported)

# A distinctive answer key: blindness tests look for these in every verifier-facing response.
SECRET_OPTION = "KEYED-OPTION-7f3a"


def open_batch(*, name: str = "mi-b01", overlap: int = 3, n_items: int = 4, n_prospective: int = 0,
               pool: str = "verifiers", verifiers=(), **batch_fields) -> Batch:
    ensure_domains()
    batch = BatchFactory(name=name, overlap=overlap, **batch_fields)
    pool_obj, _ = Pool.objects.get_or_create(name=pool)
    pool_obj.members.add(*verifiers)
    batch.pools.add(pool_obj)
    for n in range(n_items):
        ItemFactory(
            batch=batch,
            context=ContextFactory(context_id=f"{name}-s{n:04d}-w00"),
            options=[f"{name} {n} first", f"{name} {n} second", f"{SECRET_OPTION} {n}", f"{name} {n} fourth"],
            answer="C",
        )
    for n in range(n_prospective):
        ProspectiveItemFactory(
            batch=batch,
            context=ContextFactory(context_id=f"{name}-p{n:04d}-w00"),
            options=[f"{SECRET_OPTION} p{n}", f"{name} p{n} second", f"{name} p{n} third", f"{name} p{n} fourth"],
            answer="A",
        )
    return batch


def verifiers(n: int, prefix: str = "v"):
    return [UserFactory(username=f"{prefix}{i:02d}") for i in range(n)]


