from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo (`manage.py load_demo`): the top of the house, it uses every other app."""

    name = "demo"
