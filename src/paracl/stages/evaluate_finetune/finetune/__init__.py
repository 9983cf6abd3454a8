"""Fine-tuning an encoder on a task's train split and scoring it (stage evaluate_finetune).

- `tuning`: the seeded fine-tuning loop (early stop on dev) and its score on test;
- `head`: a causal LM's task head on its sentence embedding.

Kept apart from paracl.parts.evaluation so that a change here reruns evaluate_finetune
and not every embedding evaluation.
"""
