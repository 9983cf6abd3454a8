"""Where raw data comes from: the registry (`sources.tsv`, read by `registry`: URL,
checksum, size, licence of every file), `download` (HTTP with checks) and `archives`
(unpacking). The fetch stage (paracl.stages.fetch) uses them; so does the report.
"""
