from django.urls import path

from . import api, views

app_name = "studies"

urlpatterns = [
    path("s/<str:token>/", views.enter, name="enter"),
    path("s/<str:token>/work/", views.work, name="work"),
    path("s/<str:token>/done/", views.done, name="done"),
    path("studies/", views.study_list, name="list"),
    path("studies/<slug:name>/", views.study_detail, name="detail"),
    path("studies/<slug:name>/payments/<str:fmt>/", views.study_payments, name="payments"),
    path("studies/<slug:name>/participants/<int:pk>/", views.participant_action, name="participant-action"),
    path("api/v1/studies/", api.StudyListView.as_view(), name="api-list"),
    path("api/v1/studies/<slug:name>/", api.StudyDetailView.as_view(), name="api-detail"),
    path("api/v1/studies/<slug:name>/payments/", api.StudyPaymentsView.as_view(), name="api-payments"),
    path("api/v1/studies/<slug:name>/participants/<str:participant_id>/override/", api.ParticipantOverrideView.as_view(),
         name="api-override"),
    path("api/v1/studies/<slug:name>/participants/<str:participant_id>/bonuses/", api.ParticipantBonusView.as_view(),
         name="api-bonus"),
]
