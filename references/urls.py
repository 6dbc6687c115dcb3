"""Pages of the reference workflow, mounted at /annotate/ (dialtom_site/urls.py)."""
from django.urls import path

from . import views

app_name = "references"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("sets/<slug:set_name>/next/", views.claim_next, name="claim-next"),
    path("work/<uuid:assignment_id>/", views.work, name="work"),
    path("work/<uuid:assignment_id>/autosave/", views.autosave, name="autosave"),
    path("references/", views.sets, name="sets"),
    path("references/<slug:set_name>/", views.set_detail, name="set"),
    path("references/<slug:set_name>/review/<int:member_id>/", views.review, name="review"),
    path("similarity/", views.similarity_runs, name="similarity"),
    path("similarity/<int:run_id>/", views.similarity_run, name="similarity-run"),
]
