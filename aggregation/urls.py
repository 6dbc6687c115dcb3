from django.urls import path

from . import api

urlpatterns = [
    path("aggregation-runs/", api.RunListCreateView.as_view(), name="aggregation-run-list"),
    path("aggregation-runs/<int:run_id>/", api.RunDetailView.as_view(), name="aggregation-run-detail"),
]
