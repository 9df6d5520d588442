"""Imports every module that defines tables, so create_all sees them all."""

from bpservice.db import models  # noqa: F401
from bpservice.db.models import Base

__all__ = ["Base"]
