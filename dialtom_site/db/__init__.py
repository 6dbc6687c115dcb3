"""The PostgreSQL backend the studio runs on: Django's, with two changes (`base.py`)."""
