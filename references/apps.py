from django.apps import AppConfig


class ReferencesConfig(AppConfig):
    """The crowd workers' reference workflow: sets, assignments, drafts, references, similarity."""

    name = "references"
