"""The benchmark's material: corpora, sessions and turns, contexts (windows), batches and items."""
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q


class Speaker(models.TextChoices):
    INITIATOR = "initiator", "Initiator"
    RECIPIENT = "recipient", "Recipient"


class Task(models.TextChoices):
    RETROSPECTIVE = "retrospective", "Retrospective"
    PROSPECTIVE = "prospective", "Prospective"


class Attribute(models.TextChoices):
    BELIEF = "belief", "Belief"
    DESIRE = "desire", "Desire"
    INTENTION = "intention", "Intention"
    EMOTION = "emotion", "Emotion"
    KNOWLEDGE = "knowledge", "Knowledge"
    TRUST = "trust", "Trust"


ATTRIBUTE_CODES = {"B": "belief", "D": "desire", "I": "intention", "E": "emotion", "K": "knowledge", "T": "trust"}


class Variant(models.TextChoices):
    HARD = "hard", "Hard"
    EASY = "easy", "Easy"
    COUNTERFACTUAL = "counterfactual", "Counterfactual"


OPTION_LETTERS = ("A", "B", "C", "D")
NOTA = "NOTA"


# The three corpora: code, name, corpus, initiator role, recipient role.
DOMAINS = (
    ("mi", "Motivational interviewing", "AnnoMI", "counselor", "client"),
    ("esc", "Emotional support", "ESConv", "supporter", "seeker"),
    ("pfg", "Persuasion", "PersuasionForGood", "persuader", "persuadee"),
)


class Domain(models.Model):
    """A source corpus: `mi` (AnnoMI), `esc` (ESConv), `pfg` (PersuasionForGood)."""

    code = models.SlugField(max_length=10, primary_key=True)
    name = models.CharField(max_length=100)
    corpus = models.CharField(max_length=100)
    initiator_role = models.CharField(max_length=50, help_text="e.g. counselor, supporter, persuader")
    recipient_role = models.CharField(max_length=50, help_text="e.g. client, seeker, persuadee")

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return f"{self.name} ({self.code})"

    def role_name(self, speaker: str) -> str:
        return self.initiator_role if speaker == Speaker.INITIATOR else self.recipient_role


class Session(models.Model):
    """One whole source dialogue (an AnnoMI transcript, an ESConv conversation, a PFG dialogue)."""

    session_id = models.CharField(max_length=120, unique=True, help_text="e.g. mi-s0012")
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="sessions")
    source_id = models.CharField(max_length=120, help_text="the id in the source corpus")
    metadata = models.JSONField(default=dict, blank=True)
    n_turns = models.PositiveIntegerField(default=0)
    n_words = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session_id"]
        constraints = [models.UniqueConstraint(fields=["domain", "source_id"], name="session_unique_source_id")]

    def __str__(self) -> str:
        return self.session_id


class Turn(models.Model):
    """One turn of a session: an utterance (AnnoMI, ESConv), or a speaker's run of sentences (PFG)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveIntegerField()
    speaker = models.CharField(max_length=10, choices=Speaker.choices)
    source_role = models.CharField(max_length=50, blank=True)
    text = models.TextField()
    n_words = models.PositiveIntegerField()

    class Meta:
        ordering = ["session", "index"]
        constraints = [
            models.UniqueConstraint(fields=["session", "index"], name="turn_unique_index"),
            models.CheckConstraint(condition=Q(speaker__in=Speaker.values), name="turn_speaker_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.index}"


class Context(models.Model):
    """A window of 150–200 words of one session: what a retrospective item is asked about.

    `turns` holds the window's turns (`[{"speaker", "text", "source_role"?}]`) so that an
    imported context needs no ingested session; segmented contexts also point at the
    turn range of their session.
    """

    context_id = models.CharField(max_length=160, unique=True, help_text="e.g. mi-s0012-w03")
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="contexts")
    session_key = models.CharField(max_length=120, db_index=True, help_text="the session_id, even if not ingested")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, null=True, blank=True, related_name="contexts")
    window_index = models.PositiveIntegerField()
    first_turn = models.PositiveIntegerField(null=True, blank=True)
    last_turn = models.PositiveIntegerField(null=True, blank=True)
    turns = models.JSONField(default=list)
    n_words = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session_key", "window_index"]
        constraints = [
            models.UniqueConstraint(fields=["session_key", "window_index"], name="context_unique_window"),
        ]

    def __str__(self) -> str:
        return self.context_id

    def clean(self):
        if not isinstance(self.turns, list) or not self.turns:
            raise ValidationError({"turns": "a context needs at least one turn"})
        for turn in self.turns:
            if not isinstance(turn, dict) or turn.get("speaker") not in Speaker.values or not str(turn.get("text", "")).strip():
                raise ValidationError({"turns": "each turn needs a speaker (initiator/recipient) and a text"})


class BatchStatus(models.TextChoices):
    OPEN = "open", "Open"
    PAUSED = "paused", "Paused"
    CLOSED = "closed", "Closed"


class Batch(models.Model):
    """An annotation batch: Dawid–Skene is fitted per batch; verifiers work a batch's queue."""

    name = models.SlugField(max_length=100, unique=True)
    status = models.CharField(max_length=10, choices=BatchStatus.choices, default=BatchStatus.OPEN, db_index=True)
    overlap = models.PositiveSmallIntegerField(default=3, help_text="independent judgments needed per item (k)")
    lease_minutes = models.PositiveSmallIntegerField(default=20, help_text="a claim not answered in time returns to the pool")
    gold_rate = models.FloatField(default=0.0, help_text="share of attention-check (gold) items mixed into queues")
    pools = models.ManyToManyField("accounts.Pool", related_name="batches", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "batches"
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="batch_overlap_positive"),
            models.CheckConstraint(condition=Q(gold_rate__gte=0) & Q(gold_rate__lte=1), name="batch_gold_rate_share"),
            models.CheckConstraint(condition=Q(status__in=BatchStatus.values), name="batch_status_valid"),
        ]

    def __str__(self) -> str:
        return self.name


class Item(models.Model):
    """One multiple-choice question about a context, with four options and an intended answer.

    Every item has an attribute. A retrospective item asks about that state; a prospective
    item belongs to (context, attribute, variant), the attribute being the state its
    distractors were made for (the authors generate up to six per context, one per state,
    all sharing the true continuation). Ids: `<context>-<attribute>`,
    `<context>-prospective-<attribute>`, derived variants add `-easy` / `-counterfactual`.

    The intended answer (`answer`) is the answer key: it never reaches a verifier.
    """

    item_id = models.CharField(max_length=200, unique=True)
    context = models.ForeignKey(Context, on_delete=models.PROTECT, related_name="items")
    task = models.CharField(max_length=15, choices=Task.choices)
    attribute = models.CharField(
        max_length=10, choices=Attribute.choices,
        help_text="retrospective: the state asked about; prospective: the state its distractors were made for",
    )
    variant = models.CharField(max_length=15, choices=Variant.choices, default=Variant.HARD)
    target_speaker = models.CharField(max_length=10, choices=Speaker.choices, blank=True, default="")
    question = models.TextField()
    options = models.JSONField(help_text="exactly four option texts, in the original order A–D")
    answer = models.CharField(max_length=4, help_text="the intended answer: A–D, or NOTA for counterfactual items")
    profile = models.JSONField(default=dict, blank=True, help_text="mental-state profile (prospective items)")
    batch = models.ForeignKey(Batch, on_delete=models.PROTECT, related_name="items", null=True, blank=True)
    is_gold = models.BooleanField(default=False, help_text="an attention check with a known answer")
    retained_by_authors = models.BooleanField(
        default=False, help_text="in the DialToM authors' verified release (their own verification kept it)"
    )
    parent = models.ForeignKey("self", on_delete=models.CASCADE, null=True, blank=True, related_name="derived")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id"]
        constraints = [
            models.UniqueConstraint(fields=["context", "task", "attribute", "variant"], name="item_one_per_context_attribute_variant"),
            models.CheckConstraint(condition=Q(task__in=Task.values), name="item_task_valid"),
            models.CheckConstraint(condition=Q(variant__in=Variant.values), name="item_variant_valid"),
            models.CheckConstraint(condition=Q(attribute__in=Attribute.values), name="item_attribute_valid"),
            models.CheckConstraint(
                condition=Q(answer__in=OPTION_LETTERS) | (Q(answer=NOTA) & Q(variant=Variant.COUNTERFACTUAL)),
                name="item_answer_valid_letter",
            ),
        ]
        indexes = [models.Index(fields=["batch", "task"]), models.Index(fields=["task", "attribute"])]

    def __str__(self) -> str:
        return self.item_id

    @property
    def domain_id(self) -> str:
        return self.context.domain_id

    @property
    def choices(self) -> tuple[str, ...]:
        """The letters a verifier may pick: A–D, plus NOTA where it is shown."""
        return OPTION_LETTERS + ((NOTA,) if self.variant == Variant.COUNTERFACTUAL else ())

    def clean(self):
        errors = {}
        if not isinstance(self.options, list) or len(self.options) != 4:
            errors["options"] = "exactly 4 options are needed"
        elif any(not isinstance(o, str) or not o.strip() for o in self.options):
            errors["options"] = "options must be non-empty strings"
        elif len({o.strip() for o in self.options}) != 4:
            errors["options"] = "options must be pairwise different"
        if self.answer not in self.choices:
            errors["answer"] = f"must be one of {', '.join(self.choices)}"
        if self.attribute not in Attribute.values:
            errors["attribute"] = f"every item needs one of {', '.join(Attribute.values)}"
        if errors:
            raise ValidationError(errors)



class ContinuationReveal(models.Model):
    """`dialogue`'s turns contain, word for word, the true continuation of `continuation_of`.

    In the authors' pool the true continuation of window w (the intended answer of every
    prospective item of w) is the opening of window w+1's dialogue: whoever reads w+1's
    dialogue knows w's answer. The context rule (`verification.queue`) reads this table so a
    verifier never holds both. Made by `services.continuation_reveals_refresh` (found by
    `continuations.reveals_among`), after every import and by a migration for existing data.
    """

    dialogue = models.ForeignKey(Context, on_delete=models.CASCADE, related_name="reveals")
    continuation_of = models.ForeignKey(Context, on_delete=models.CASCADE, related_name="revealed_by")

    class Meta:
        ordering = ["dialogue", "continuation_of"]
        constraints = [
            models.UniqueConstraint(fields=["dialogue", "continuation_of"], name="continuation_reveal_unique"),
            models.CheckConstraint(condition=~Q(dialogue=models.F("continuation_of")), name="continuation_reveal_other_context"),
        ]
        indexes = [models.Index(fields=["continuation_of", "dialogue"], name="continuation_reveal_by_target")]

    def __str__(self) -> str:
        return f"{self.dialogue_id} reveals {self.continuation_of_id}"


class ImportedFile(models.Model):
    """A file an importer read to the end and whose import was committed: its content hash
    (sha256), so that importing the same content again is skipped (`annotation.imported`).
    Written in the import's own transaction: a failed import records nothing."""

    importer = models.CharField(max_length=40, help_text="the command that imported it: dialtom, written_inferences, ...")
    options = models.CharField(max_length=200, blank=True, default="",
                               help_text="the options that change what the import writes (seed, batch, set), canonical")
    sha256 = models.CharField(max_length=64)
    name = models.CharField(max_length=300, help_text="the file's name when imported")
    path = models.TextField(help_text="the file's path when imported")
    size = models.BigIntegerField()
    imported_at = models.DateTimeField(auto_now_add=True)
    counts = models.JSONField(default=dict, blank=True, help_text="the import's created counts")

    class Meta:
        ordering = ["-imported_at"]
        indexes = [models.Index(fields=["importer", "sha256"])]

    def __str__(self) -> str:
        return f"{self.importer} {self.name} {self.sha256[:12]}"


# --- item summaries (issue 23: the staff's item list at any size) -------------------------


class ItemSummary(models.Model):
    """One row per item with what the staff's item list sorts and filters on, kept up to date
    where its sources change, so the list reads one small row per item and never a pass over
    judgments, results, flags or decisions:

    - the row itself: made by a database trigger when an item is inserted (any path, COPY
      included), its batch and kind refreshed when the item row changes (migration `item_summary`);
    - `judgments`: the answer statement (`verification.statements.item_summary_sql`), the
      step-by-step answer and the judgments import;
    - the aggregate (`label`, `posterior`, `n_agree`, `agreement`, `retained`, `disagrees`):
      when an aggregation run becomes current for its batches;
    - `flags_open` / `flags_total` and `decision`: the review services.

    `review.item_summaries.item_summaries_rebuild` makes them all again from their sources;
    a test checks the two agree after a random history. `posterior` and `agreement` are -1
    for an item without a current aggregate (a sort key without NULLs keeps keyset pages simple).
    """

    item = models.OneToOneField(Item, on_delete=models.CASCADE, primary_key=True, related_name="summary")
    batch = models.ForeignKey(Batch, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_constraint=False)
    domain = models.CharField(max_length=10)
    task = models.CharField(max_length=15)
    attribute = models.CharField(max_length=10)
    variant = models.CharField(max_length=15)
    judgments = models.PositiveIntegerField(default=0)
    flags_open = models.PositiveIntegerField(default=0)
    flags_total = models.PositiveIntegerField(default=0)
    label = models.CharField(max_length=10, blank=True, help_text="the current aggregate's label ('' without one)")
    posterior = models.FloatField(default=-1.0, help_text="the current aggregate's posterior; -1 without one")
    n_agree = models.PositiveIntegerField(null=True, blank=True, help_text="judgments the aggregate counted that agree with its label")
    agreement = models.FloatField(default=-1.0, help_text="n_agree / judgments the aggregate counted; -1 without one")
    retained = models.BooleanField(null=True, blank=True)
    disagrees = models.BooleanField(null=True, blank=True, help_text="the aggregate's label is not the intended answer")
    decision = models.CharField(max_length=4, blank=True, help_text="the staff decision in force ('' none, keep, drop)")

    class Meta:
        ordering = ["item"]
        indexes = [
            models.Index(fields=["posterior", "item"], name="item_summary_posterior"),
            models.Index(fields=["agreement", "item"], name="item_summary_agreement"),
            models.Index(fields=["judgments", "item"], name="item_summary_judgments"),
            models.Index(fields=["flags_open", "item"], name="item_summary_flags"),
            models.Index(fields=["decision", "item"], name="item_summary_decision"),
            models.Index(fields=["batch", "posterior", "item"], name="item_summary_batch_posterior"),
            models.Index(fields=["batch", "item"], name="item_summary_batch"),
        ]

    def __str__(self) -> str:
        return f"summary of {self.item_id}"
