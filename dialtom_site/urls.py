"""The root URLconf: every app's pages by name (`include("app.urls")`), no app's views imported here."""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("", include("accounts.entry_urls")),  # home, log in and out; the admin's login, ahead of the admin
    path("admin/", admin.site.urls),
    path("", include("accounts.urls")),
    path("", include("review.urls")),
    path("", include("verification.urls")),
    path("api/v1/", include("aggregation.urls")),
    path("dashboard/", include("dashboard.urls")),
    path("api/v1/releases/", include("releases.urls")),
    path("releases/", include("releases.page_urls")),
    path("", include("scoring.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's init script as its own response (?script): no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api_docs.html"),
         name="api-docs"),
    path("annotate/", include("references.urls")),
    path("api/v1/", include("references.api")),
    path("api/v1/", include("review.api_urls")),
    path("", include("studies.urls")),
    path("", include("report.urls")),
]

# JSON under /api/, the studio's pages elsewhere; outages are 503s (dialtom_site/errors.py).
handler400 = "dialtom_site.errors.bad_request"
handler403 = "dialtom_site.errors.permission_denied"
handler404 = "dialtom_site.errors.page_not_found"
handler500 = "dialtom_site.errors.server_error"
