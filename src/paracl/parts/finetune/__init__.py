"""Fine-tuning an encoder on a labelled task (stages evaluate_finetune and
train_intermediate: STILTs' intermediate classifier is the same head and step).

- `tuning`: the seeded fine-tuning loop (early stop on dev, or the last epoch) and its
  score on test;
- `head`: a causal LM's task head on its sentence embedding;
- `saved_head`: the intermediate classifier's head kept beside its encoder, and that
  classifier scored where its task is a target task (MNLI after STILTs on MNLI).

Kept apart from paracl.parts.evaluation so that a change here reruns those two stages
and not every embedding evaluation.
"""
