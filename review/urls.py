from django.urls import path

from . import views

app_name = "review"
urlpatterns = [
    path("review/flags/", views.flag_queue, name="flags"),
    path("review/items/", views.item_list, name="items"),
    path("review/items-bulk/", views.item_bulk, name="items-bulk"),
    path("review/items-count/", views.item_list_count, name="items-count"),
    path("review/items/<str:item_id>/", views.item_detail, name="item"),
    path("review/verifiers/", views.verifiers, name="verifiers"),
    path("review/verifiers/pairs.csv", views.verifier_pairs_csv, name="verifier-pairs-csv"),
    path("review/batches/<slug:batch_name>/guideline/", views.guideline_edit, name="guideline-edit"),
    path("verify/<slug:batch_name>/guidelines/", views.guidelines, name="guidelines"),
    path("verify/<slug:batch_name>/flag/", views.flag, name="flag"),
]
