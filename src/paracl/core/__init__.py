"""The floor every other part of paracl stands on: infrastructure, no stage's work.

- `errors`: the one-line error types; `io`: atomic writes, Parquet and JSON; `schemas`:
  the Parquet schemas of every artifact; `params`: params.yaml's schema and checks;
  `configs`: a part's config built from its checked params section (`from_section`);
- `languages/`: one profile per language (its splitter, tokenizer, data, jobs);
- `device`: device, seeds and precision; `models`: model resolution (hub id, local
  folder, packaged model); `freeze`: which weights train;
- `distributed/`: executors (local or Ray), shard caches, the cross-process gather;
- `batching`, `token_rows` (a training set tokenized once, padded per batch), `sampling`
  (the seeded corpus sample), `tables`, `plots`, `key_figures`
  (dvc.yaml's metrics), `yaml_comments` (params.yaml's comments for the reference);
- `stage`: what every stages/<stage>.py script runs (its arguments, params, errors).
"""
