"""Shared parts: code that more than one stage uses, below the stages and above core.

- `corpus/`: raw text to clean sentences (prepare_corpus, prepare_domain, corrupt);
- `encoder/`: `build` the SentenceTransformer to train and save, `embed` a saved one;
- `evaluation/`: the task registry, readers, metrics and the evaluators;
- `filler/`: the blank filler family (T5 or a causal LM) for JCSE's hard negatives;
- `finetune/`: an encoder fine-tuned on a labelled task (evaluate_finetune, and STILTs'
  classifier in train_intermediate);
- `losses/`: the papers' contrastive losses, one per file;
- `nli`: SICK read as NLI pairs and sentences compared against the STS sets
  (nli_triplets, nli_pairs);
- `paraphraser/`: the tag-controlled paraphraser family; `tags/`: SIM/BLEU tags;
- `sts_scorer`: the semantic-similarity scorer; `translate`: the round trip's
  translators and shard worker (roundtrip, paraphrase_pairs); `llama_batch`: batched
  llama.cpp generation, for translate; `runs`: train_contrastive's runs (methods x
  seeds), which three stages and the CLI read; `stilts_tables`: the round-trip paper's
  Table 5 and Figure 4 (summary, `paracl report`).
"""
