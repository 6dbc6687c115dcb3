from django.urls import path

from . import api, views

app_name = "verification"

urlpatterns = [
    path("verify/", views.batch_list, name="batches"),
    path("verify/judgments/<int:judgment_id>/", views.judgment_edit, name="judgment-edit"),
    path("verify/<slug:batch_name>/", views.audit, name="audit"),
    path("verify/<slug:batch_name>/answer/", views.audit_answer, name="answer"),
    path("verify/<slug:batch_name>/skipped/<uuid:claim_id>/restore/", views.claim_restore, name="restore"),
    path("api/v1/next-item/", api.NextItemView.as_view(), name="api-next-item"),
    path("api/v1/judgments/", api.JudgmentCreateView.as_view(), name="api-judgments"),
    path("api/v1/judgments/<int:judgment_id>/", api.JudgmentChangeView.as_view(), name="api-judgment-change"),
    path("api/v1/progress/", api.ProgressView.as_view(), name="api-progress"),
    path("api/v1/batches/<slug:batch_name>/status/", api.BatchStatusView.as_view(), name="api-batch-status"),
    path("api/v1/gold-accuracy/", api.GoldAccuracyView.as_view(), name="api-gold-accuracy"),
    path("api/v1/items/gold/", api.ItemsGoldView.as_view(), name="api-items-gold"),
]
