from django.urls import path

from . import api, views

app_name = "accounts"

urlpatterns = [
    path("accounts/link/<str:token>/", views.link_login, name="link-login"),
    path("accounts/profile/", views.profile, name="profile"),
    path("accounts/profile/token/", views.profile_token, name="profile-token"),
    path("api/v1/people/<str:username>/exclusion/", api.ExclusionView.as_view(), name="api-exclusion"),
]
