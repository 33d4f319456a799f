"""REST resources under /v1: streams, entries, groups, consumers, pending entries."""
