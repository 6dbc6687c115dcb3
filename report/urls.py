from django.urls import path

from . import api, views

urlpatterns = [
    path("report/", views.report_page, name="study-report"),
    path("api/v1/study-report/", api.StudyReportApi.as_view(), name="api-study-report"),
]
