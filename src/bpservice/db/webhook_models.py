"""Tables for webhooks (service part 2). Import Base from bpservice.db.models."""

from __future__ import annotations
