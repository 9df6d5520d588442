"""Planning and sending: the calls that end the import soonest, the journal that makes it
resumable, the submitter that sends them paced by the rate limits, and the results (summary and
reject report)."""
