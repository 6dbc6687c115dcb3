from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts import views as account_views

urlpatterns = [
    path("", account_views.home, name="home"),
    path("accounts/login/", account_views.ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # One login door, the throttled one: the admin's own login form would bypass the throttle.
    path("admin/login/", account_views.admin_login),
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
