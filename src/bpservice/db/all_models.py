"""Imports every module that defines tables, so create_all sees them all."""

from bpservice.db import (  # noqa: F401
    benchmark_models,
    models,
    oauth_models,
    report_models,
    webhook_models,
)
from bpservice.db.models import Base

__all__ = ["Base"]
