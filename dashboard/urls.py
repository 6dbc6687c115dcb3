from django.urls import path

from . import views

app_name = "dashboard"
urlpatterns = [
    path("", views.index, name="index"),
    path("fragment/<slug:name>/", views.fragment, name="fragment"),
    path("csv/<slug:name>.csv", views.table_csv, name="csv"),
    path("batch/<int:batch_id>/<slug:action>/", views.batch_action, name="batch-action"),
    path("verifier/<int:user_id>/<slug:action>/", views.verifier_action, name="verifier-action"),
    path("aggregation/start/", views.aggregation_start, name="aggregation-start"),
    path("releases/create/", views.release_create, name="release-create"),
]
