"""The ways in, at the site's root and without a namespace: home, log in and out, the admin's login."""
from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", views.ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # One login door, the throttled one: the admin's own login form would bypass the throttle.
    path("admin/login/", views.admin_login),
]
