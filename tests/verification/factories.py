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




ATTRIBUTES = ("belief", "desire", "intention", "emotion", "knowledge", "trust")


def context_with_items(*, batch: Batch, context_id: str, profile_variants=("hard", "easy", "counterfactual"),
                       profile_states=("trust",), profile_batch: Batch | None = None, **context_fields):
    """A context as the authors shape it: six retrospective items (one per attribute) and its
    profile-bearing items (prospective items, one per state in `profile_states`, each in the
    `profile_variants`), whose profile repeats the retrospective answers.
    Returns (retrospective items, profile-bearing items)."""
    context = ContextFactory(context_id=context_id, **context_fields)
    retrospective = [
        ItemFactory(batch=batch, context=context, attribute=attribute,
                    options=[f"{attribute} {letter} #{context.pk}" for letter in "ABCD"], answer="C")
        for attribute in ATTRIBUTES
    ]
    profile = {attribute: f"{attribute} C #{context.pk}" for attribute in ATTRIBUTES}
    bearing = [
        ProspectiveItemFactory(batch=profile_batch or batch, context=context, variant=variant, profile=profile,
                               attribute=state, item_id=f"{context_id}-prospective-{state}-{variant}",
                               options=[f"continuation #{context.pk}", *(f"distractor {n}.{d} #{context.pk}" for d in (2, 3, 4))],
                               answer="NOTA" if variant == "counterfactual" else "A")
        for n, (state, variant) in enumerate((s, v) for s in profile_states for v in profile_variants)
    ]
    return retrospective, bearing
