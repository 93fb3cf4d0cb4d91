"""The batch engine: datasets in, runs out."""

from jurist.evaluate._readers import Records, read_records, require_fields

__all__ = ["Records", "read_records", "require_fields"]
