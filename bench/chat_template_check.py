"""(`python bench/chat_template_check.py --sts`) Real packaged models: chat templates, token ids, and (SmolLM2) STS-B test Spearman
with mean pooling, through sentence-transformers' default (template) vs build_encoder."""

import sys
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Pooling
from transformers import AutoTokenizer

from paracl.core.models import resolve_model
from paracl.parts.encoder.build import build_encoder
from paracl.parts.evaluation.metrics import spearman
from paracl.parts.evaluation.readers import read_stsb

torch.set_num_threads(2)
TEXT = "a girl is styling her hair ."


def stock(path):
    t = Transformer(str(path))
    m = SentenceTransformer(modules=[t, Pooling(t.get_embedding_dimension(), "mean")], device="cpu")
    if m.tokenizer.pad_token is None:
        m.tokenizer.pad_token = m.tokenizer.eos_token
    return m


for mid in ["HuggingFaceTB/SmolLM2-135M-Instruct", "google/gemma-3-270m"]:
    r = resolve_model(mid)
    tok = AutoTokenizer.from_pretrained(r.path)
    s, e = stock(r.path), build_encoder(r.path, "mean", None)
    ids_s = s.preprocess([TEXT])["input_ids"][0].tolist()
    ids_e = e.preprocess([TEXT])["input_ids"][0].tolist()
    ids_t = tok(TEXT)["input_ids"]
    print(
        mid,
        "| template:",
        bool(tok.chat_template),
        "| modalities stock:",
        list(s[0].modality_config),
    )
    print("  stock:", len(ids_s), repr(tok.decode(ids_s)[:120]))
    print("  build_encoder:", len(ids_e), ids_e == ids_t, repr(tok.decode(ids_e)))
    if mid.startswith("HuggingFaceTB") and "--sts" in sys.argv:
        df = read_stsb("/work/shared/data/stsbenchmark/sts-test.csv")
        for name, m in (("stock (chat template)", s), ("build_encoder (plain)", e)):
            t0 = time.time()
            m.eval()
            a = m.encode(df["sentence1"].tolist(), batch_size=64, convert_to_numpy=True)
            b = m.encode(df["sentence2"].tolist(), batch_size=64, convert_to_numpy=True)
            cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
            print(
                f"  STS-B test ({len(df)} pairs) {name}: spearman {spearman(cos, df['label'].astype(float).to_numpy()):.2f} ({time.time() - t0:.0f} s)"
            )
