from django.urls import path

from . import api, views

urlpatterns = [
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("leaderboard/compare/", views.compare, name="leaderboard-compare"),
    path("leaderboard/upload/", views.upload, name="leaderboard-upload"),
    path("leaderboard/<slug:name>/", views.run_detail, name="leaderboard-run"),
    path("leaderboard/<slug:name>/publish/", views.publish, name="leaderboard-publish"),
    path("api/v1/models/", api.ModelRunListApi.as_view(), name="api-models"),
    path("api/v1/models/compare/", api.ModelRunCompareApi.as_view(), name="api-models-compare"),
    path("api/v1/models/baselines/", api.BaselineListApi.as_view(), name="api-models-baselines"),
    path("api/v1/models/<slug:name>/", api.ModelRunDetailApi.as_view(), name="api-model"),
    path("api/v1/models/<slug:name>/rescore/", api.ModelRunRescoreApi.as_view(), name="api-model-rescore"),
    path("api/v1/models/<slug:name>/publish/", api.ModelRunPublishApi.as_view(), name="api-model-publish"),
]
