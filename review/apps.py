from django.apps import AppConfig


class ReviewConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "review"
    verbose_name = "Review (guidelines, flags, adjudication)"
