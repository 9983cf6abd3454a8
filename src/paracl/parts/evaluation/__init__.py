"""Evaluation of sentence encoders on sentence-pair tasks (English and Japanese).

- `metrics`: correlations, F1, accuracy, MCC, retrieval (MRR/MAP/P@k), alignment and
  uniformity, the dev-chosen cosine threshold;
- `readers`: one reader per dataset file format (quirks of the mirror handled);
  `jcse_readers`: the JCSE authors' evaluation data (JACSTS, QAbot pools);
- `tasks`: the task registry (files, the papers' splits, labels, metric, paper
  hyper-parameters), the seeded re-split where a split is missing offline, and the job
  names: EMBEDDING_JOBS (`evaluate.tasks`) and FINETUNE_JOBS (`evaluate.finetune_tasks`),
  checked when params load;
- `sample`: the one seeded, stratified evaluation sample (never the first N rows);
- `pi_classes`: the cross-lingual PI paper's classes of pairs and Table I's mean over them;
- `ebsim_tables`: EBSIM's Table 2 and Figure 2 (few-shot sizes: tasks.FEW_SHOT) from the
  fine-tuning jobs, for the summary and the report's plot;
- `unsup_sts`, `paraphrase_id`, `retrieval` (QAbot question retrieval): one evaluator per
  file (fine-tuning: paracl.parts.finetune);
- `job_result`: the result frame both evaluate stages write (their work:
  paracl.stages.evaluate, paracl.stages.evaluate_finetune; the table: paracl.stages.summary).
"""
