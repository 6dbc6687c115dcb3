from django.contrib import admin

from .models import Batch, Context, Domain, Item, Session, Turn

admin.site.register([Domain, Session, Turn, Context, Batch, Item])
