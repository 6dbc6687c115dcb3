from django.urls import path

from . import api

app_name = "releases"
urlpatterns = [
    path("", api.ReleaseListView.as_view(), name="list"),
    path("<str:version>/", api.ReleaseDetailView.as_view(), name="detail"),
    path("<str:version>/items", api.ReleaseItemsView.as_view(), name="items"),
    path("<str:version>/files/<str:name>", api.ReleaseFileView.as_view(), name="file"),
]
