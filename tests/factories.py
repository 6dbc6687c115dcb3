"""factory_boy factories shared by every test module."""

import factory
from factory.django import DjangoModelFactory

from accounts.models import Role, User
from annotation.services import domains_ensure
from annotation.models import Batch, Context, Domain, Item, Task, Variant
from verification.models import Judgment


class UserFactory(DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"verifier{n:02d}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    role = Role.VERIFIER
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests-1")


class StaffFactory(UserFactory):
    username = factory.Sequence(lambda n: f"staff{n:02d}")
    role = Role.STAFF
    is_staff = True


class CrowdWorkerFactory(UserFactory):
    username = factory.Sequence(lambda n: f"crowd{n:02d}")
    role = Role.CROWD_WORKER


def api_for(user):
    """A DRF test client that sends `user`'s API token, as a script or a crowd platform would."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def domain(code: str = "mi") -> Domain:
    domains_ensure()  # a transactional test's flush removes the migration's rows
    return Domain.objects.get(code=code)


class BatchFactory(DjangoModelFactory):
    class Meta:
        model = Batch
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"batch-{n:02d}")
    overlap = 3


class ContextFactory(DjangoModelFactory):
    class Meta:
        model = Context

    context_id = factory.Sequence(lambda n: f"mi-s{n:04d}-w00")
    domain = factory.LazyFunction(lambda: domain("mi"))
    session_key = factory.LazyAttribute(lambda c: c.context_id.rsplit("-w", 1)[0])
    window_index = 0
    turns = factory.LazyFunction(
        lambda: [
            {"speaker": "initiator", "text": "So what brings you here today?"},
            {"speaker": "recipient", "text": "My doctor said I should cut down on drinking."},
        ]
    )
    n_words = 15


class ItemFactory(DjangoModelFactory):
    class Meta:
        model = Item

    item_id = factory.LazyAttribute(
        lambda i: f"{i.context.context_id}-{'prospective-' if i.task == Task.PROSPECTIVE else ''}{i.attribute}-{i.variant}"
    )
    context = factory.SubFactory(ContextFactory)
    task = Task.RETROSPECTIVE
    attribute = "trust"
    variant = Variant.HARD
    target_speaker = "recipient"
    question = "How much does the client trust the counselor at this point?"
    options = factory.Sequence(lambda n: [f"Option A{n}", f"Option B{n}", f"Option C{n}", f"Option D{n}"])
    answer = "C"
    batch = factory.SubFactory(BatchFactory)


class ProspectiveItemFactory(ItemFactory):
    task = Task.PROSPECTIVE
    attribute = "trust"
    target_speaker = ""
    question = "Which continuation is most consistent with this profile?"
    profile = factory.LazyFunction(
        lambda: {a: f"{a} of the client" for a in ("belief", "desire", "intention", "emotion", "knowledge", "trust")}
    )
    answer = "A"


class JudgmentFactory(DjangoModelFactory):
    class Meta:
        model = Judgment

    item = factory.SubFactory(ItemFactory)
    verifier = factory.SubFactory(UserFactory)
    batch = factory.LazyAttribute(lambda j: j.item.batch)
    label = "A"
    displayed_label = factory.LazyAttribute(lambda j: j.label)
