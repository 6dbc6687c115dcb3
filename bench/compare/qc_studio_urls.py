"""The studio's URLs plus the bare view of bench/queue_compare.py."""
import json

from django.db import connection
from django.http import HttpResponse
from django.urls import include, path


def bare_sql(request):
    """The baseline: no authentication, exactly one SQL round trip (one item row by primary key)."""
    pk = int(request.GET.get("id", "1"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, item_id, question FROM annotation_item WHERE id = %s", [pk])
        row = cursor.fetchone()
    body = {"id": row[0], "item_id": row[1], "question": row[2]} if row else {}
    return HttpResponse(json.dumps(body), content_type="application/json")


urlpatterns = [path("bench/bare-sql/", bare_sql), path("", include("dialtom_site.urls"))]
