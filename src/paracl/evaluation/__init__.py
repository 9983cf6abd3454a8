"""Evaluation of sentence encoders on sentence-pair tasks (English and Japanese).

- `metrics`: correlations, F1, accuracy, MCC, retrieval (MRR/MAP/P@k), alignment and
  uniformity, the dev-chosen cosine threshold;
- `readers`: one reader per dataset file format (quirks of the mirror handled);
- `tasks`: the task registry (files, splits, labels, metric, paper hyper-parameters)
  and the seeded, documented re-split where a split is missing offline;
- `encoder`: load an encoder dir; embed each unique sentence once (cache);
- `unsup_sts`, `paraphrase_id`, `finetune`: one evaluator per file;
- `jobs`: what one `evaluate` stage run does for a (method, task) pair;
- `summary`: the Table-3-style table over methods × tasks.
"""
