# DialToM Studio: one image for the web process and the Celery worker.
FROM node:20-slim AS assets
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=dialtom_site.settings.production
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-client && rm -rf /var/lib/apt/lists/*
COPY requirements/ requirements/
RUN pip install --no-cache-dir -r requirements/base.txt -c requirements/constraints.txt
COPY --from=assets /app/node_modules/htmx.org/dist node_modules/htmx.org/dist
COPY --from=assets /app/node_modules/chart.js/dist node_modules/chart.js/dist
COPY --from=assets /app/node_modules/swagger-ui-dist node_modules/swagger-ui-dist
COPY . .
# collectstatic needs no database; the secret here exists only for this build step.
RUN SECRET_KEY=build-only-collectstatic-key-0123456789-abcdefghijklmnopqrstuvwxyz \
    DIALTOM_SHUFFLE_SECRET=build-only-collectstatic-shuffle-secret-0123 \
    ALLOWED_HOSTS=build python manage.py collectstatic --no-input \
 && useradd --create-home --uid 1000 studio && mkdir -p /app/media && chown studio /app/media
USER studio
EXPOSE 8000
CMD ["gunicorn", "dialtom_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "4", "--threads", "2", "--worker-class", "gthread", "--timeout", "60", "--access-logfile", "-"]
