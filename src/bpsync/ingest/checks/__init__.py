"""Checks: the file-level checks that need every reading of a meter at once (duplicates,
overlaps, future dates, gaps, unusual periods, the anomaly flags the service will set), before
anything is sent."""
