from django.urls import path

from . import api

urlpatterns = [
    path("batches/<slug:name>/guideline/", api.GuidelineApi.as_view(), name="api-guideline"),
    path("items/", api.ItemListApi.as_view(), name="api-items"),
    path("items/<str:item_id>/decisions/", api.ItemDecisionsApi.as_view(), name="api-item-decisions"),
    path("verifier-pairs/", api.VerifierPairsApi.as_view(), name="api-verifier-pairs"),
]
