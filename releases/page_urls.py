from django.urls import path

from . import views

app_name = "release-pages"
urlpatterns = [
    path("", views.release_list, name="list"),
    path("<str:version>/", views.release_detail, name="detail"),
    path("<str:version>/manifest.json", views.release_manifest, name="manifest"),
]
